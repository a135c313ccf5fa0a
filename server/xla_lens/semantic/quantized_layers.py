"""Where a script's model is built from bitsandbytes' quantized layers (held-out 145's QLoRA:
``models/lora.py`` subclasses ``bnb.nn.Params4bit`` and ``bnb.nn.Linear4bit``).

bitsandbytes quantizes those weights when they move to CUDA (``Params4bit.cuda`` /
``Params4bit.to`` quantize only for a ``cuda`` device; ``Int8Params`` likewise). Moved to an XLA
device they stay unquantized, and the forward then fails in bnb's CUDA kernels (``matmul_4bit``
asserts on the missing quant state): the model move of such a script is not a plain change of
device. Found on disk in the script and the workspace modules its top-level imports run, never
imported or run.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .device_sites import places_a_module
from .model import ScriptModel
from .workspace_calls import parsed_module
from .workspace_imports import modules_run_by, top_level_imports

LIBRARY = "bitsandbytes"
# bitsandbytes.nn's weight classes and the layers holding them: each quantizes on its CUDA move.
QUANTIZED = frozenset(
    {
        "Params4bit",
        "Int8Params",
        "Linear4bit",
        "LinearFP4",
        "LinearNF4",
        "Linear8bitLt",
        "Embedding4bit",
        "EmbeddingFP4",
        "EmbeddingNF4",
        "Embedding8bit",
        "OutlierAwareLinear",
        "SwitchBackLinear",
    }
)


def quantized_layer_module(model: ScriptModel) -> str | None:
    """The file (its name, or "this script") that uses a bitsandbytes quantized layer, among
    the script and the workspace modules its top-level imports run; None when none does."""

    def build() -> str | None:
        if _uses_quantized_layers(model.tree):
            return "this script"
        if not model.path or model.path.startswith("<"):
            return None
        script = Path(model.path)
        seen: set[Path] = set()
        for node in top_level_imports(model.tree):  # type: ignore[arg-type]
            for path in modules_run_by(script, node):
                if path in seen:
                    continue
                seen.add(path)
                parsed = parsed_module(path)
                if parsed is not None and _uses_quantized_layers(parsed.tree):
                    return _shown(script, path)
        return None

    return model.memo(quantized_layer_module, build)


def quantizing_move_reason(model: ScriptModel, moved: ast.expr | None) -> str:
    """Why moving ``moved`` to XLA waits for review: it is a module and the script's model is
    built from bitsandbytes' quantized layers; "" otherwise."""
    if moved is None or not places_a_module(model, moved):
        return ""
    where = quantized_layer_module(model)
    if where is None:
        return ""
    return (
        f"the model's layers come from bitsandbytes ({where}), which quantizes their weights "
        "on this move to CUDA; moved to XLA they stay unquantized and bnb's CUDA kernels fail "
        "in the forward: replace the bnb layers with torch.nn ones (bf16 weights) first"
    )


def _shown(script: Path, path: Path) -> str:
    try:
        return path.relative_to(script.parent).as_posix()
    except ValueError:
        return path.name


def _uses_quantized_layers(tree: ast.AST) -> bool:
    """``tree`` names a quantized layer of bitsandbytes: through ``import bitsandbytes as
    bnb`` (``bnb.nn.Linear4bit``), ``from bitsandbytes import nn`` or ``from bitsandbytes.nn
    import Linear4bit``."""
    library: set[str] = set()  # local names of the bitsandbytes package
    nn: set[str] = set()  # local names of bitsandbytes.nn
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == LIBRARY or alias.name.startswith(LIBRARY + "."):
                    if alias.asname is None:
                        library.add(LIBRARY)
                    elif alias.name == LIBRARY:
                        library.add(alias.asname)
                    elif alias.name == f"{LIBRARY}.nn":
                        nn.add(alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            if node.module == LIBRARY:
                nn.update(a.asname or a.name for a in node.names if a.name == "nn")
            elif node.module == f"{LIBRARY}.nn" or (node.module or "").startswith(f"{LIBRARY}.nn."):
                if any(a.name in QUANTIZED for a in node.names):
                    return True
    if not (library or nn):
        return False
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr in QUANTIZED):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in nn:
            return True
        if (
            isinstance(owner, ast.Attribute)
            and owner.attr == "nn"
            and isinstance(owner.value, ast.Name)
            and owner.value.id in library
        ):
            return True
    return False
