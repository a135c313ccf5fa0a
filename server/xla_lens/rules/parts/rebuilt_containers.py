"""What ``xm.save`` does differently from ``torch.save`` (XLA108's review). It rebuilds
every container it saves as a plain one (measured on torch_xla 2.9: an ``OrderedDict`` state
dict, a ``collections.Counter`` and a ``defaultdict`` load back as ``dict``, a tuple as a
list). Most checkpoints do not care; two kinds do:

- a ``MultiStepLR`` state: its ``milestones`` are a ``Counter``, and a resumed scheduler
  stepped with an epoch (``scheduler.step(epoch)``, the closed form) calls
  ``milestones.elements()`` and raises AttributeError (3D-ResNets' checkpoint, held-out 85);
- a ``Counter`` or ``defaultdict`` the script saves itself: read back, a missing key raises
  KeyError where it counted zero or built a default.

And it copies every object it meets through its ``__dict__``, writing the attributes back:
an object that refers to a class (an OmegaConf/hydra config, a class itself) makes it raise
``TypeError: 'mappingproxy' object does not support item assignment`` where ``torch.save``
pickles it (measured on torch_xla 2.9; piano-gpt's checkpoint ``"run_config": cfg``, held-out
88, died at its first save).
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel, method_name

MULTISTEP = frozenset({"torch.optim.lr_scheduler.MultiStepLR"})
COUNTING = frozenset({"collections.Counter", "collections.defaultdict"})


CONFIG_TYPES = ("DictConfig", "ListConfig")
CONFIG_MAKERS = frozenset(
    {
        "omegaconf.OmegaConf.create",
        "omegaconf.OmegaConf.load",
        "omegaconf.OmegaConf.merge",
        "omegaconf.OmegaConf.structured",
        "hydra.compose",
        "hydra.utils.instantiate",
    }
)


def walker_crash_reason(model: ScriptModel, saved: list[ast.AST]) -> str:
    """Why ``xm.save`` could raise on what is saved ("" when nothing saved is a config object
    or a class)."""
    if (
        "omegaconf" not in model.source
        and "hydra" not in model.source
        and "class " not in (model.source)
    ):
        return ""
    for value in saved:
        entries = (
            value.values
            if isinstance(value, ast.Dict)
            else value.elts
            if isinstance(value, ast.List | ast.Tuple)
            else [value]
        )
        for entry in entries:
            if entry is None:
                continue
            what = _config_object(model, entry) or _class_object(model, entry)
            if what:
                return (
                    f"the checkpoint holds `{model.segment(entry)[:40]}`, {what}: xm.save copies "
                    "every object it meets attribute by attribute and raises TypeError "
                    "('mappingproxy' object does not support item assignment) on one that "
                    "refers to a class, where torch.save pickles it (measured on torch_xla "
                    "2.9); save a plain copy (OmegaConf.to_container(cfg)) or keep torch.save "
                    "for that entry"
                )
    return ""


def _config_object(model: ScriptModel, entry: ast.AST) -> str:
    root = entry
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name):
        return ""
    fn = model.enclosing_function(entry)
    if fn is not None:
        for arg in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs):
            if arg.arg == root.id and arg.annotation is not None:
                if ast.unparse(arg.annotation).endswith(CONFIG_TYPES):
                    return "an OmegaConf config"
        if any(
            (model.qualname(d.func if isinstance(d, ast.Call) else d) or "") == "hydra.main"
            for d in fn.decorator_list
        ) and root.id in {a.arg for a in fn.args.args}:
            return "the hydra config"
    for value in model.assigned_from(root.id):
        if isinstance(value, ast.Call) and model.call_name(value) in CONFIG_MAKERS:
            return "an OmegaConf config"
    return ""


def _class_object(model: ScriptModel, entry: ast.AST) -> str:
    """A class named as a value: one of the script's, or a CamelCase import."""
    if not isinstance(entry, ast.Name):
        return ""
    if entry.id in {c.name for c in model.nodes_of(ast.ClassDef)}:  # type: ignore[attr-defined]
        return "a class"
    target = model.imports.get(entry.id, "")
    last = target.rpartition(".")[2]
    if target and last[:1].isupper() and not last.isupper():
        return "a class"
    return ""


def rebuilt_container_reason(model: ScriptModel, saved: list[ast.AST]) -> str:
    """Why the plain containers ``xm.save`` writes could change the resumed run ("" when
    nothing saved is such a container). ``saved``: the saved object and the values it is
    built from (its assignments, the entries stored into it)."""
    multistep = next(model.calls_to(*MULTISTEP), None) is not None
    for value in saved:
        if isinstance(value, ast.Tuple):
            return (
                f"the checkpoint is a tuple (`{model.segment(value)[:40]}`): xm.save rebuilds "
                "the containers it saves and writes a tuple back as a list (measured on "
                "torch_xla 2.9); unpacking it reads the same, but code that tests for a tuple, "
                "hashes it or compares it with one sees a list"
            )
        for n in ast.walk(value):
            if not isinstance(n, ast.Call):
                continue
            if multistep and method_name(n) == "state_dict" and _scheduler_receiver(n):
                return (
                    f"the checkpoint holds `{model.segment(n)}`, and this script builds a "
                    "MultiStepLR, whose milestones are a collections.Counter: xm.save rebuilds "
                    "the containers it saves as plain dicts (measured on torch_xla 2.9), so a "
                    "resumed scheduler stepped with an epoch (`scheduler.step(epoch)`) raises "
                    "AttributeError ('dict' object has no attribute 'elements'); keep "
                    "torch.save for that entry, or check the resumed scheduler only calls "
                    "step()"
                )
            if model.call_name(n) in COUNTING:
                return (
                    f"the checkpoint holds `{model.segment(n)[:40]}`: xm.save rebuilds the "
                    "containers it saves as plain dicts (measured on torch_xla 2.9), so what is "
                    "loaded back has no default for a missing key (KeyError where it counted "
                    "zero); keep torch.save for that entry"
                )
    return ""


def _scheduler_receiver(call: ast.Call) -> bool:
    recv = call.func.value if isinstance(call.func, ast.Attribute) else None
    while isinstance(recv, ast.Attribute):
        if "sched" in recv.attr.lower():
            return True
        recv = recv.value
    return isinstance(recv, ast.Name) and "sched" in recv.id.lower()


__all__ = ["rebuilt_container_reason", "walker_crash_reason"]
