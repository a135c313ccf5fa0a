"""XLA101 where the training device is a setting this file never sees: ``device =
torch.device(cfg.training.device)`` with ``cfg`` a hydra/OmegaConf config or an object handed
in (diffusion_policy's workspaces, held-out 37: ``device: "cuda:0"`` lives in a YAML file).
The script moves its model there and trains; the conversion's syncs and XLA steps assume that
device is XLA, so it must become the XLA device, in the config or here.

Only where nothing in this file decides the value (no argparse option of that name, no store
into it, no picker the other XLA101 checks report) and the script is not written for torch_xla
already (API no fix writes, or a finished XLA script: the syncs other fixes add are no evidence). The fix, for review, writes the XLA device here: the config's value is then ignored.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ...semantic import xla_api
from ...semantic.advice import Advice, FixPlan
from ...semantic.device_intent import finished_on_xla, hand_written_xla
from ...semantic.edits import Replace
from ...semantic.loop_syncs import written_for_xla
from ...semantic.model import Emitter, ScriptModel, dotted, method_name
from ...semantic.node_helpers import main_guard
from ...semantic.xla_api import Target

PLACING = frozenset({"to", "cuda"})
REVIEW = (
    "the configured value is then ignored here: a run of the same config on CUDA or the CPU "
    'gets the XLA device too; setting it to "xla" in the config (with torch_xla imported) keeps '
    "the choice there"
)


def config_device_advice(model: ScriptModel, target: Target, handled: set[int]) -> Iterator[Advice]:
    # Where this file trains, or is the program itself: drq's workspace (held-out 71) hands
    # the device to its replay buffer and to an agent built by hydra.utils.instantiate, which
    # trains out of sight. A module a script calls (detr's models/detr.py) is left to the
    # script, whose own option says it.
    # "Written for XLA" must not mean "imports torch_xla": the syncs and steps other fixes add
    # import it while the device is still the config's (videowalk, held-out 171: the finding
    # vanished after the first round and the cuDNN setting waiting for it went in).
    if "device" not in model.source or _written_for_xla(model):
        return
    if not model.training_loops and main_guard(model.tree) is None:
        return
    options = _option_names(model)
    for call in [*model.calls_to("torch.device"), *_attribute_reads(model)]:
        if id(call) in handled:
            continue
        if isinstance(call, ast.Call):
            if len(call.args) != 1 or call.keywords:
                continue
            setting = call.args[0]
        else:
            setting = call
        path = _setting_path(model, setting)
        if path is None or "." not in path or "device" not in path.rpartition(".")[2].lower():
            continue
        if path.rpartition(".")[2] in options or _stored(model, path):
            continue  # decided in this file: the option and store checks report it there
        shown = model.segment(setting) if isinstance(setting, ast.Subscript) else path
        if not _places_with(model, call):
            continue
        handled.add(id(call))
        e = Emitter(model)
        code = xla_api.device(e, target)
        yield Advice(
            f"the training device comes from `{shown}`, which this file never sets (a config "
            "file or a caller): the script places its model or tensors there, and after the conversion it must be the "
            f'XLA device ("xla" there, or {code} here)',
            model.span(call),
            fix=FixPlan(
                f"Use {code}",
                (Replace(model.span(call), code), *e.imports),
                safe=False,
                review_reason=REVIEW,
            ),
        )


def _written_for_xla(model: ScriptModel) -> bool:
    return hand_written_xla(model) or written_for_xla(model) or finished_on_xla(model)


LOADERS = frozenset(
    {"yaml.safe_load", "yaml.load", "yaml.full_load", "json.load", "toml.load", "tomllib.load"}
)


def _setting_path(model: ScriptModel, node: ast.expr) -> str | None:
    """``cfg.training.device``, or ``config["device"]`` as ``config.device`` where ``config``
    holds settings (WavCaps, held-out 132: ``config = yaml.safe_load(f)`` then
    ``torch.device(config["device"])``, "cuda" in the YAML file)."""
    keys = []
    while isinstance(node, ast.Subscript):
        key = node.slice
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        keys.append(key.value)
        node = node.value
    base = dotted(node)
    if base is None or not keys:
        return base
    root = base.partition(".")[0]
    loaded = any(
        isinstance(v, ast.Call) and model.call_name(v) in LOADERS for v in model.assigned_from(root)
    )
    if not (loaded or _names_a_config(node)):
        return None
    return ".".join([base, *reversed(keys)])


def _attribute_reads(model: ScriptModel) -> list[ast.Attribute]:
    """``device = config.device`` (HTR-best-practices' trainer, held-out 86: the value is in
    config.yaml): the setting itself, bound to a name."""
    out = []
    for node in model.nodes_of(ast.Assign):
        value = node.value  # type: ignore[attr-defined]
        if (
            isinstance(value, ast.Attribute)
            and _names_a_config(value.value)
            and len(node.targets) == 1  # type: ignore[attr-defined]
            and isinstance(node.targets[0], ast.Name)  # type: ignore[attr-defined]
            and "device" in node.targets[0].id.lower()  # type: ignore[attr-defined]
        ):
            out.append(value)
    return out


# What holds settings: ``config.device``, ``self.cfg.device``, ``hparams.device`` — not a
# tensor's or a framework's own ``.device`` (``audio.device``, ``accelerator.device``).
CONFIG_NAME = re.compile(
    r"^(cfg|config|conf|configs|args|arguments|opt|opts|options|hparams|hps?|params|settings"
    r"|flags)$|_(cfg|config|conf|args|opts?|options|hparams|params|settings)$",
    re.IGNORECASE,
)


def _names_a_config(receiver: ast.expr) -> bool:
    """Some part of the receiver names settings (``cfg.system`` of piano-gpt's
    ``cfg.system.device``, held-out 88)."""
    node: ast.expr | None = receiver
    while isinstance(node, ast.Attribute):
        if CONFIG_NAME.search(node.attr):
            return True
        node = node.value
    return isinstance(node, ast.Name) and bool(CONFIG_NAME.search(node.id))


def _option_names(model: ScriptModel) -> set[str]:
    """Destinations of the script's own ``add_argument`` calls (``--device`` -> device)."""
    out = set()
    for call in model.method_calls("add_argument"):
        for a in call.args:
            if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-"):
                out.add(a.value.lstrip("-").replace("-", "_"))
        for k in call.keywords:
            if k.arg == "dest" and isinstance(k.value, ast.Constant):
                out.add(str(k.value.value))
    return out


def _stored(model: ScriptModel, path: str) -> bool:
    """``cfg.training.device = ...`` somewhere in this file."""
    return any(
        _setting_path(model, t) == path
        for node in model.nodes_of(ast.Assign)
        for t in node.targets  # type: ignore[attr-defined]
    )


def _places_with(model: ScriptModel, device_call: ast.expr) -> bool:
    """The device the call builds moves something: ``x.to(torch.device(...))`` or a name
    bound to it and passed to ``.to()``/``.cuda()`` (``device = torch.device(...)``;
    ``self.model.to(device)``) in the same function."""
    parent = model.parent(device_call)
    if isinstance(parent, ast.Call) and method_name(parent) in PLACING:
        return True
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1):
        return False
    name = dotted(parent.targets[0])
    if name is None:
        return False
    scope = model.enclosing_function(device_call)
    for call in model.calls:
        if model.enclosing_function(call) is not scope:
            continue
        args = [dotted(a) for a in (*call.args, *(k.value for k in call.keywords))]
        if name not in args:
            continue
        # ``.to(device)``, or handed to a constructor that places its own tensors there
        # (``ReplayBuffer(shape, capacity, self.device)``).
        callee = dotted(call.func) or ""
        if method_name(call) in PLACING or callee.rpartition(".")[2][:1].isupper():
            return True
    return False
