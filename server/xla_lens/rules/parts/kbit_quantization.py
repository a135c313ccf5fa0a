"""XLA405's bitsandbytes quantization findings: k-bit loads, CUDA-index device maps, and the
option default that switches k-bit loading on.

QLoRA-style scripts rarely write ``load_in_4bit=True``: they write ``load_in_4bit=args.bits
== 4`` with ``bits`` defaulting to 4 in a dataclass (``bits: int = field(default=4)``) or an
argparse option. The load call is reported where it is, and the default too, because that is
where a run without flags picks the CUDA-only path (the user changes it there, or passes the
flag on XLA). No fix: turning quantization off changes what the script trains.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.arguments import argparse_options
from ...semantic.model import ScriptModel, dotted
from ..base import Finding, Severity

QUANTIZED_LOADS = {"load_in_8bit": 8, "load_in_4bit": 4}
QUANTIZATION_ADVICE = (
    "bitsandbytes quantization (8-bit/4-bit weights) runs CUDA kernels only: on XLA load the "
    "weights in bfloat16 (torch_dtype=torch.bfloat16) and train without k-bit quantization"
)
QUANTIZATION_MANUAL = (
    "Load the weights in bfloat16 (torch_dtype=torch.bfloat16) and drop the 8-bit/4-bit "
    "quantization and its k-bit preparation."
)
DEVICE_MAP_ADVICE = (
    "device_map places the model on a CUDA device index (accelerate's big-model loading knows "
    "no XLA device): load on the CPU (no device_map) and move the model with .to(device) to "
    "the XLA device"
)
DEVICE_MAP_MANUAL = "Drop device_map and call model.to(device) with the XLA device."


def quantization_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    yield from _quantization(model, code)
    yield from _device_map_assignments(model, code)
    yield from _switching_defaults(model, code)


def _quantization(model: ScriptModel, code: str) -> Iterator[Finding]:
    for call in model.calls:
        name = (model.call_name(call) or "").rsplit(".", 1)[-1]
        if name in {
            "BitsAndBytesConfig",
            "prepare_model_for_int8_training",
            "prepare_model_for_kbit_training",
        }:
            yield Finding(
                code,
                QUANTIZATION_ADVICE,
                model.span(call),
                Severity.WARNING,
                manual=QUANTIZATION_MANUAL,
            )
            continue
        for kw in call.keywords:
            if kw.arg in QUANTIZED_LOADS and not (
                isinstance(kw.value, ast.Constant) and kw.value.value in (False, None)
            ):
                yield Finding(
                    code,
                    QUANTIZATION_ADVICE,
                    model.span(kw.value),
                    Severity.WARNING,
                    manual=QUANTIZATION_MANUAL,
                )
            elif kw.arg == "device_map" and _cuda_index_map(kw.value):
                yield Finding(
                    code,
                    DEVICE_MAP_ADVICE,
                    model.span(kw.value),
                    Severity.WARNING,
                    manual=DEVICE_MAP_MANUAL,
                )


def _device_map_assignments(model: ScriptModel, code: str) -> Iterator[Finding]:
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        if any(isinstance(t, ast.Name) and "device_map" in t.id for t in node.targets) and (
            _cuda_index_map(node.value)
        ):
            yield Finding(
                code,
                DEVICE_MAP_ADVICE,
                model.span(node.value),
                Severity.WARNING,
                manual=DEVICE_MAP_MANUAL,
            )


def _cuda_index_map(value: ast.AST) -> bool:
    """``{"": local_rank}`` / ``{"": 0}`` / ``{"": Accelerator().process_index}``."""
    if not isinstance(value, ast.Dict):
        return False
    for key, v in zip(value.keys, value.values, strict=True):
        if (
            isinstance(key, ast.Constant)
            and key.value == ""
            and not (isinstance(v, ast.Constant) and isinstance(v.value, str))
        ):
            return True
    return False


def _switching_defaults(model: ScriptModel, code: str) -> Iterator[Finding]:
    """``load_in_4bit=args.bits == 4`` (or ``=args.load_in_4bit``) whose option or dataclass
    field defaults to the value that turns the k-bit load on."""
    reported: set[int] = set()
    for call in model.calls:
        for kw in call.keywords:
            if kw.arg not in QUANTIZED_LOADS:
                continue
            found = _option_and_wanted(kw.value)
            if found is None:
                continue
            option, wanted = found
            default = option_default(model, option)
            if (
                not isinstance(default, ast.Constant)
                or type(default.value) is not type(wanted)
                or default.value != wanted
                or id(default) in reported
            ):
                continue
            reported.add(id(default))
            shown = "True" if wanted is True else str(wanted)
            yield Finding(
                code,
                f"`{option}` defaults to {shown}: a run without flags loads bitsandbytes "
                f"{QUANTIZED_LOADS[kw.arg]}-bit weights ({kw.arg}, line {kw.value.lineno}), "
                "which run CUDA kernels only; on XLA load bfloat16 weights without k-bit "
                "quantization",
                model.span(default),
                Severity.WARNING,
                manual=f"On XLA default `{option}` to a value that loads bfloat16 weights "
                f"without quantization (or pass that value for --{option} on the command "
                "line), and drop the k-bit preparation.",
            )


def _option_and_wanted(value: ast.expr) -> tuple[str, object] | None:
    """``args.bits == 4`` → ("bits", 4); ``args.load_in_4bit`` → ("load_in_4bit", True)."""
    if isinstance(value, ast.Attribute):
        return value.attr, True
    if not (
        isinstance(value, ast.Compare) and len(value.ops) == 1 and isinstance(value.ops[0], ast.Eq)
    ):
        return None
    for side, other in ((value.left, value.comparators[0]), (value.comparators[0], value.left)):
        name = side.attr if isinstance(side, ast.Attribute) else None
        if name is not None and isinstance(other, ast.Constant) and type(other.value) is int:
            return name, other.value
    return None


def option_default(model: ScriptModel, name: str) -> ast.expr | None:
    """The default of an argparse option ``--name`` or, failing that, of the one dataclass
    field ``name`` in the file (``HfArgumentParser`` dataclasses); None when there is none,
    or more than one candidate."""
    option = argparse_options(model).get(name)
    if option is not None:
        return option.default
    found: list[ast.expr] = []
    for cls in model.nodes_of(ast.ClassDef):
        assert isinstance(cls, ast.ClassDef)
        if not _is_dataclass(cls):
            continue
        for stmt in cls.body:
            if not (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.target.id == name
                and stmt.value is not None
            ):
                continue
            value = stmt.value
            if isinstance(value, ast.Call) and (dotted(value.func) or "").endswith("field"):
                kw = next((k for k in value.keywords if k.arg == "default"), None)
                if kw is None:
                    return None
                value = kw.value
            found.append(value)
    return found[0] if len(found) == 1 else None


def _is_dataclass(cls: ast.ClassDef) -> bool:
    for dec in cls.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if (dotted(target) or "").rsplit(".", 1)[-1] == "dataclass":
            return True
    return False
