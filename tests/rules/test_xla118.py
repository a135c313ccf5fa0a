"""XLA118: a call into a workspace helper whose body needs converting is named at the call."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.engine.leftover import leftover
from xla_lens.rules import xla118_workspace_helper as rule
from xla_lens.rules.base import Severity
from xla_lens.rules.parts import helper_evidence
from xla_lens.semantic import workspace, workspace_calls, workspace_classes

from tests.helpers import src

CODE = "XLA118"

PICKER_UTIL = """
import torch

def prepare_device(n_gpu_use):
    n_gpu = torch.cuda.device_count()
    if n_gpu_use > n_gpu:
        n_gpu_use = n_gpu
    device = torch.device('cuda:0' if n_gpu_use > 0 else 'cpu')
    return device, list(range(n_gpu_use))

def read_json(name):
    return open(name).read()
"""

DIST_UTILS = """
import os
import sys
import torch
import torch.distributed as dist

def _bind(gpu):
    torch.cuda.set_device(gpu)

def init_distributed_mode(args):
    if not torch.cuda.is_available():
        sys.exit(1)
    args.rank = int(os.environ["RANK"])
    dist.init_process_group(backend="nccl", init_method="env://")
    _bind(args.rank)

def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    rule.clear_cache()
    workspace_calls.clear_cache()
    workspace.clear_cache()
    workspace_classes.clear_cache()
    yield


def _write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(src(code), encoding="utf-8")
    return path


def _found(script: Path, code: str | None = CODE):
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    return [f for f in result.findings if code is None or f.code == code]


def test_a_picker_reexported_by_a_package_init_is_named_at_the_call(tmp_path: Path):
    _write(tmp_path / "utils" / "__init__.py", "from .util import *\n")
    _write(tmp_path / "utils" / "util.py", PICKER_UTIL)
    script = _write(
        tmp_path / "train.py",
        """
        from utils import prepare_device, read_json
        cfg = read_json("c.json")
        device, device_ids = prepare_device(cfg["n_gpu"])
        """,
    )
    (f,) = _found(script)
    assert f.span.start.line == 2 and f.fix is None
    assert "prepare_device() runs code in utils/util.py" in f.message
    assert "line 4:" in f.message and "(XLA403)" in f.message  # device_count
    assert "line 7:" in f.message and "(XLA101)" in f.message  # the picker
    assert "utils/util.py" in f.manual
    # Convert / fix: the device is for a person to check, not "0 findings left".
    left = leftover(_found(script, None))
    assert left.device_by_hand == [f] and f in left.manual
    assert "Check the device by hand at line 3 (XLA118)" in left.statement("x")


def test_module_attribute_call_names_nccl_set_device_and_env_reads(tmp_path: Path):
    _write(tmp_path / "utils.py", DIST_UTILS)
    script = _write(
        tmp_path / "main.py",
        """
        import utils
        def main(args):
            utils.init_distributed_mode(args)
            if utils.is_main_process():
                print("hi")
        """,
    )
    (f,) = _found(script)
    assert f.span.start.line == 2
    assert f.message.startswith("utils.init_distributed_mode() runs code in utils.py")
    # NCCL (XLA205) and set_device in the helper it calls (XLA403) are named first.
    assert "line 13:" in f.message and "(XLA205)" in f.message
    assert "line 7: torch.cuda.set_device()" in f.message
    # The RANK read is right where torchrun starts the processes and the group is built from
    # its variables (XLA202 is quiet on such code, held-out 48): not named.
    assert "(XLA202)" not in f.message
    assert "more there" not in f.message


def test_ddp_device_ids_in_a_helper_of_a_subpackage(tmp_path: Path):
    _write(tmp_path / "pyproject.toml", "")
    _write(tmp_path / "helpers" / "__init__.py", "")
    _write(
        tmp_path / "helpers" / "torch_utils.py",
        """
        import os
        from torch.nn.parallel import DistributedDataParallel as DDP
        LOCAL_RANK = int(os.getenv("LOCAL_RANK", -1))

        def wrap_ddp(model):
            return DDP(model, device_ids=[LOCAL_RANK], output_device=LOCAL_RANK)
        """,
    )
    script = _write(
        tmp_path / "scripts" / "train.py",
        """
        from helpers.torch_utils import wrap_ddp as smart
        model = smart(model)
        model = smart(model)
        """,
    )
    # The change is in one place, said at the first call; the second is pointed there.
    f, again = _found(script)
    assert f.span.start.line == 1
    assert (again.span.start.line, again.severity.name) == (2, "INFORMATION")
    assert "as the call at line 2 does" in again.message
    assert f.message.startswith("smart() (wrap_ddp) runs code in helpers/torch_utils.py")
    assert "line 6:" in f.message and "(XLA205)" in f.message
    # The module-level env read belongs to no function: not the helper's evidence.
    assert "line 3" not in f.message


@pytest.mark.parametrize(
    "helper",
    [
        # nothing to convert
        "def add(a, b):\n    return a + b\n",
        # freeing or querying CUDA memory is harmless on XLA: said in that file only
        "import torch\ndef add(a, b):\n    torch.cuda.empty_cache()\n    return a + b\n",
        # already written for XLA
        "import torch\nimport torch_xla\ndef add(a, b):\n    return torch.device('cuda')\n",
        # silenced in the helper's file
        "import torch\ndef add(a, b):\n    torch.cuda.set_device(a)  # xla-lens: ignore[XLA403]\n",
        # a class whose CUDA setup is in a method the script never calls
        "import torch\nclass add:\n    def __init__(self, a, b):\n        self.a = a\n"
        "    def bind(self):\n        torch.cuda.set_device(0)\n",
        # a type named, never run
        "import torch.nn as nn\ndef add(m):\n    return isinstance(m, (nn.BatchNorm2d, nn.SyncBatchNorm))\n",
    ],
)
def test_quiet_when_the_helper_has_nothing_to_convert(tmp_path: Path, helper: str):
    (tmp_path / "helper.py").write_text(helper, encoding="utf-8")
    script = _write(tmp_path / "main.py", "from helper import add\nadd(1, 2)\n")
    assert _found(script) == []


def test_quiet_when_the_script_is_already_xla_or_the_module_is_out_of_reach(tmp_path: Path):
    _write(tmp_path / "utils.py", DIST_UTILS)
    # Written for XLA by a person (torch_xla API the fixes never write): quiet.
    xla = _write(
        tmp_path / "xla.py",
        "import torch_xla.debug.metrics as met\nimport utils\nutils.init_distributed_mode(a)\n",
    )
    assert _found(xla) == []
    # A library module, an unknown module, an unsaved buffer: nothing is said.
    lib = _write(
        tmp_path / "lib.py",
        "import os\nfrom missing import f\nos.path.join('a')\nf()\nimport torch\ntorch.cuda.init()\n",
    )
    assert _found(lib) == []
    buffer = analyze("import utils\nutils.init_distributed_mode(a)\n")
    assert [f for f in buffer.findings if f.code == CODE] == []


def test_not_reported_twice_where_xla403_already_names_the_helper(tmp_path: Path):
    _write(tmp_path / "setup.py", "")
    _write(
        tmp_path / "lib" / "dist.py",
        """
        import os
        import torch
        import torch.distributed as dist

        def init(rank):
            torch.cuda.set_device(rank)
            dist.init_process_group("nccl")
            return os.environ["LOCAL_RANK"]

        def init_and_pick(rank):
            init(rank)
            rank = os.environ["RANK"]
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        """,
    )
    script = _write(
        tmp_path / "train.py",
        """
        from lib.dist import init, init_and_pick
        init(0)
        x = init_and_pick(0)
        """,
    )
    found = _found(script, None)
    helper = [(f.code, f.span.start.line) for f in found if f.code in {"XLA403", CODE}]
    # init(): XLA403 names set_device and NCCL itself; a rank read alone adds nothing.
    assert ("XLA403", 1) in helper and (CODE, 1) not in helper
    # init_and_pick(): XLA403 names the setup, XLA118 only the picker XLA403 does not name.
    (f,) = [f for f in found if f.code == CODE]
    assert f.span.start.line == 2
    assert "line 13:" in f.message and "(XLA101)" in f.message  # the picker
    assert "(XLA202)" not in f.message  # torchrun's group: its RANK read stays right
    assert "line 6" not in f.message and "line 7" not in f.message


def test_relative_and_dotted_module_imports(tmp_path: Path):
    pkg = tmp_path / "proj"
    _write(pkg / "__init__.py", "")
    _write(pkg / "common" / "__init__.py", "from .dist import setup as init_all\n")
    _write(pkg / "common" / "dist.py", "import torch\ndef setup():\n    torch.cuda.set_device(0)\n")
    script = _write(
        pkg / "train.py",
        """
        from . import common
        import proj.common.dist
        common.init_all()
        proj.common.dist.setup()
        """,
    )
    found = _found(script)
    # One helper, said at its first call; the second is pointed there.
    assert [(f.span.start.line, f.severity.name) for f in found] == [
        (2, "WARNING"),
        (3, "INFORMATION"),
    ]
    # Named from the folder above the package, where Python imports it from and where
    # `xla-lens check proj/common/dist.py` runs (held-out 31: YOLOX's hints said
    # "data/data_prefetcher.py", a path no shell at the repository root finds).
    assert "common.init_all() (setup) runs code in proj/common/dist.py" in found[0].message
    assert "`xla-lens check proj/common/dist.py`" in found[0].manual


def test_nothing_in_the_helper_runs_and_its_analysis_is_cached(tmp_path: Path, monkeypatch):
    marker = tmp_path / "ran"
    _write(
        tmp_path / "helper.py",
        f"""
        import torch
        open({str(marker)!r}, "w").write("ran")
        def go():
            return torch.zeros(1, device="cuda")
        """,
    )
    script = _write(tmp_path / "main.py", "from helper import go\ngo()\n")
    calls = []
    real = helper_evidence._analyse
    monkeypatch.setattr(helper_evidence, "_analyse", lambda *a: calls.append(a) or real(*a))
    assert len(_found(script)) == 1
    assert len(_found(script)) == 1
    assert len(calls) == 1 and not marker.exists()
    # A changed file is read again.
    (tmp_path / "helper.py").write_text("def go():\n    return 1\n", encoding="utf-8")
    assert _found(script) == []
    assert len(calls) == 2


def test_a_library_autocast_reexported_by_a_workspace_module_is_out_of_reach(tmp_path: Path):
    _write(tmp_path / "pyproject.toml", "")
    _write(
        tmp_path / "utils" / "torch_utils.py",
        """
        from contextlib import nullcontext
        from torch import autocast as torch_autocast
        from somelib.torch_utils import autocast as smart_autocast
        """,
    )
    script = _write(
        tmp_path / "train.py",
        """
        from utils.torch_utils import smart_autocast, torch_autocast, nullcontext
        from otherlib import autocast_ctx
        for x in data:
            with smart_autocast(True):
                loss = model(x)
            with torch_autocast("cuda"), nullcontext():
                loss = model(x)
            with autocast_ctx():
                loss = model(x)
        """,
    )
    found = _found(script)
    assert [f.span.start.line for f in found] == [3, 7]
    assert (
        "`somelib.torch_utils.autocast`, re-exported by utils/torch_utils.py:" in found[0].message
    )
    assert found[0].fix is None and 'torch.autocast("xla"' in found[0].manual
    assert "`otherlib.autocast_ctx`" in found[1].message and "re-exported" not in found[1].message
    # An unsaved buffer cannot tell a library from a module it cannot see: nothing is said.
    assert [f for f in analyze(script.read_text()).findings if f.code == CODE] == []


def test_a_rank_env_read_alone_is_no_reason_to_convert_a_helper(tmp_path: Path):
    _write(
        tmp_path / "common.py",
        """
        import os

        def print0(*a):
            if int(os.environ.get("RANK", 0)) == 0:
                print(*a)

        def banner():
            print0("hello")
        """,
    )
    script = _write(
        tmp_path / "train.py", "from common import print0, banner\nbanner()\nprint0(1)\n"
    )
    assert _found(script) == []


def test_still_said_after_fix_converted_the_script(tmp_path: Path):
    # ``fix`` makes the script import torch_xla; its helper is as CUDA-bound as before, and
    # the summary of what is left must still name it.
    _write(tmp_path / "utils.py", DIST_UTILS)
    script = _write(
        tmp_path / "main.py",
        """
        import torch
        import torch_xla
        import utils
        utils.init_distributed_mode(args)
        model = torch.nn.Linear(2, 2).to(torch_xla.device())
        """,
    )
    (f,) = _found(script)
    assert f.span.start.line == 3
    assert "1 item needs a change by hand" in leftover(_found(script, None)).statement("x")


# --- classes of workspace modules: constructors, methods on their instances, bases ---------

TRAINER = """
import os
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, loader):
        self.device = torch.device("cuda")
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.model = DDP(model.cuda(), device_ids=[self.local_rank])
        self.scaler = torch.cuda.amp.GradScaler()
        self.opt = torch.optim.AdamW(self.model.parameters())
        self.loader = loader

    def train(self, epochs):
        for _ in range(epochs):
            self._epoch()

    def _epoch(self):
        for x, y in self.loader:
            with torch.cuda.amp.autocast():
                loss = nn.functional.cross_entropy(self.model(x.to(self.device)), y)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()

    def evaluate(self):
        return len(self.loader)
"""


def _trainer_script(tmp_path: Path, body: str) -> Path:
    _write(tmp_path / "pyproject.toml", "")
    _write(tmp_path / "trainer.py", TRAINER)
    return _write(tmp_path / "train.py", body)


def test_a_constructor_and_the_methods_called_on_its_instance_are_followed(tmp_path: Path):
    script = _trainer_script(
        tmp_path,
        """
        import torch
        from trainer import Trainer

        def main():
            model = torch.nn.Linear(4, 2)
            trainer = Trainer(model, loader=[])
            trainer.train(3)
            print(trainer.evaluate())

        main()
        """,
    )
    init, train = _found(script)
    assert (init.span.start.line, train.span.start.line) == (5, 6)
    assert init.fix is None and train.fix is None
    assert init.message.startswith("Trainer() runs code in trainer.py that needs converting")
    # What __init__ needs: the CUDA device, .cuda() and DDP device_ids first ...
    assert "line 9:" in init.message and "(XLA101)" in init.message
    assert "line 11:" in init.message and "(XLA205)" in init.message
    assert "and 2 more there" in init.message  # ... the GradScaler and the env read counted
    assert "it chooses the device there" in init.message
    # train() runs _epoch() through self: its CUDA autocast is named at the call.
    assert train.message.startswith("trainer.train() (Trainer.train) runs code in trainer.py")
    assert "line 22:" in train.message and "(XLA102)" in train.message
    assert "trainer.py" in train.manual
    # Convert / fix: the device is left for a person to check.
    assert leftover(_found(script, None)).device_by_hand == [init]


def test_a_bound_method_stored_in_a_name_then_called_is_followed(tmp_path: Path):
    """FixMatch's main (held-out 91): ``run = trainer.train`` then ``run(3)`` runs
    Trainer.train as ``trainer.train(3)`` would. A name bound twice is not followed."""
    script = _trainer_script(
        tmp_path,
        """
        import torch
        from trainer import Trainer

        def main():
            trainer = Trainer(torch.nn.Linear(4, 2), loader=[])
            run = trainer.train
            run(3)

        main()
        """,
    )
    init, run = _found(script)
    assert run.span.start.line == 6
    assert run.message.startswith("run() (Trainer.train) runs code in trainer.py")
    assert "(XLA102)" in run.message
    twice = script.read_text().replace("    run(3)", "    run(3)\n    run = print\n    run(1)")
    script.write_text(twice, encoding="utf-8")
    rule.clear_cache()
    assert [f.span.start.line for f in _found(script)] == [4]


def test_the_binding_that_reaches_a_method_call_decides_its_class(tmp_path: Path):
    """SRGAN (held-out 95): ``generator = Generator(...)`` then a method call on it in the same
    branch, while the other branch loads ``generator`` from a checkpoint: the call runs the
    class's method. Where both bindings can reach the call, it is not followed."""
    body = """
        import torch
        from trainer import Trainer

        def main(ckpt):
            if ckpt is None:
                trainer = Trainer(torch.nn.Linear(4, 2), loader=[])
                trainer.train(3)
            else:
                trainer = torch.load(ckpt)
            return trainer
        """
    script = _trainer_script(tmp_path, body)
    found = {f.span.start.line: f for f in _found(script)}
    assert sorted(found) == [5, 6]
    assert found[6].message.startswith("trainer.train() (Trainer.train) runs code in trainer.py")
    after_if = body.replace("                trainer.train(3)\n", "").replace(
        "            return trainer", "            trainer.train(3)"
    )
    script.write_text(src(after_if), encoding="utf-8")
    rule.clear_cache()
    assert [f.span.start.line for f in _found(script)] == [5]


def test_a_method_called_on_the_module_or_its_wrapper_is_followed(tmp_path: Path):
    """Tacotron2 (held-out 97): ``(model.module if n_gpu > 1 else model).parse_batch(b)``
    calls the same object's class either way."""
    script = _trainer_script(
        tmp_path,
        """
        import torch
        from trainer import Trainer

        def main(n_gpu):
            trainer = Trainer(torch.nn.Linear(4, 2), loader=[])
            (trainer.module if n_gpu > 1 else trainer).train(3)

        main(1)
        """,
    )
    init, train = _found(script)
    assert train.span.start.line == 5
    assert train.message.startswith("trainer.train() (Trainer.train) runs code in trainer.py")
    # The other order (WaveGrad, held-out 97: ``(model if n == 1 else model.module)``), and
    # two different names, which name no one object.
    for choice, followed in (
        ("(trainer if n_gpu == 1 else trainer.module)", True),
        ("(trainer if n_gpu == 1 else other)", False),
    ):
        text = script.read_text().replace("(trainer.module if n_gpu > 1 else trainer)", choice)
        script.write_text(text, encoding="utf-8")
        rule.clear_cache()
        lines = [f.span.start.line for f in _found(script)]
        assert lines == ([4, 5] if followed else [4])
        choice_now = choice
        script.write_text(text.replace(choice_now, "(trainer.module if n_gpu > 1 else trainer)"))


def test_a_class_reexported_by_a_package_init_and_a_chained_call(tmp_path: Path):
    _write(tmp_path / "setup.py", "")
    _write(tmp_path / "models" / "__init__.py", "from .darknet import *\nfrom . import util\n")
    _write(
        tmp_path / "models" / "darknet.py",
        """
        import torch
        import torch.nn as nn
        __all__ = ["Darknet"]

        class Darknet(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.anchors = torch.tensor(cfg).cuda()

            def load_weights(self, path):
                return torch.load(path, map_location="cuda:0")
        """,
    )
    _write(tmp_path / "models" / "util.py", "")
    script = _write(
        tmp_path / "tools" / "train.py",
        """
        import models
        from models import Darknet
        net = Darknet([1, 2])
        models.Darknet([3]).load_weights("w.pt")
        """,
    )
    first, chained = _found(script)
    assert first.span.start.line == 2 and "Darknet() runs code in models/darknet.py" in (
        first.message
    )
    assert "line 8:" in first.message and "(XLA101)" in first.message
    # The constructor is said once (at its first call); the method is its own finding.
    assert chained.span.start.line == 3
    assert chained.message.startswith("models.Darknet(...).load_weights() (Darknet.load_weights)")


def test_base_classes_of_other_modules_and_overrides(tmp_path: Path):
    _write(tmp_path / "pyproject.toml", "")
    _write(tmp_path / "base" / "__init__.py", "from .base_trainer import BaseTrainer\n")
    _write(
        tmp_path / "base" / "base_trainer.py",
        """
        import torch
        import torch.distributed as dist

        class BaseTrainer:
            def __init__(self, model):
                self.model = model
                self._setup()

            def _setup(self):
                dist.init_process_group("nccl")
                torch.cuda.set_device(0)

            def train(self):
                for epoch in range(3):
                    self._train_epoch(epoch)
                    self._save(epoch)

            def _train_epoch(self, epoch):
                torch.cuda.manual_seed(epoch)

            def _save(self, epoch):
                torch.save(self.model.state_dict(), f"e{epoch}.pt")
        """,
    )
    _write(
        tmp_path / "trainer" / "__init__.py",
        "from .trainer import *\n",
    )
    _write(
        tmp_path / "trainer" / "trainer.py",
        """
        import torch
        from base import BaseTrainer

        class Trainer(BaseTrainer):
            def _train_epoch(self, epoch):
                self.model.to(torch.device("cuda:0"))
        """,
    )
    script = _write(
        tmp_path / "train.py",
        """
        from base import BaseTrainer
        from trainer import Trainer

        class MyTrainer(BaseTrainer):
            def _save(self, epoch):
                pass

            def fit(self):
                self.train()

        t = Trainer(None)
        t.train()
        MyTrainer(None).fit()
        """,
    )
    fit, init, train = _found(script)  # in source order
    # Trainer() runs BaseTrainer.__init__ (inherited), which calls _setup on self.
    assert init.span.start.line == 10
    assert init.message.startswith(
        "Trainer() (BaseTrainer.__init__) runs code in base/base_trainer.py"
    )
    assert "(XLA205)" in init.message and "torch.cuda.set_device()" in init.message
    # t.train(): BaseTrainer.train, with Trainer's override of _train_epoch (another file).
    assert train.message.startswith(
        "t.train() (BaseTrainer.train) runs code in base/base_trainer.py and trainer/trainer.py"
    )
    assert "trainer/trainer.py line 6:" in train.message and "(XLA101)" in train.message
    assert "base/base_trainer.py line 22:" in train.message  # BaseTrainer._save (XLA108)
    assert "line 19" not in train.message  # the overridden base method does not run
    assert "xla-lens check base/base_trainer.py trainer/trainer.py" in train.manual
    # A class of the script on a workspace base: self.train() runs the base's method, where
    # BaseTrainer._train_epoch (not overridden here) seeds CUDA; its own _save is its own.
    # MyTrainer(None).fit() adds nothing: its lines were named at self.train() already.
    assert fit.span.start.line == 8
    assert fit.message.startswith("self.train() (BaseTrainer.train) runs code in base/")
    assert "line 19:" in fit.message and "line 22" not in fit.message


@pytest.mark.parametrize(
    "trainer",
    [
        # the device comes from the script; nothing CUDA-only runs in the called methods
        "import torch\nclass Trainer:\n    def __init__(self, model, device):\n"
        "        self.model = model.to(device)\n    def train(self, n):\n        return n\n"
        "    def bind(self):\n        torch.cuda.set_device(0)\n",
        # already converted: the module uses torch_xla
        "import torch\nimport torch_xla\nclass Trainer:\n    def __init__(self, model, device):\n"
        "        self.model = model.cuda()\n    def train(self, n):\n"
        "        torch.cuda.manual_seed(n)\n",
        # silenced in its file
        "import torch\nclass Trainer:\n    def __init__(self, model, device):\n"
        "        self.model = model.cuda()  # xla-lens: ignore[XLA101]\n"
        "    def train(self, n):\n        return n\n",
    ],
)
def test_quiet_when_the_class_has_nothing_to_convert(tmp_path: Path, trainer: str):
    (tmp_path / "trainer.py").write_text(trainer, encoding="utf-8")
    script = _write(
        tmp_path / "train.py",
        "import torch\nfrom trainer import Trainer\nt = Trainer(m, torch.device('cpu'))\n"
        "t.train(3)\n",
    )
    assert _found(script) == []


def test_quiet_for_library_classes_unknown_instances_and_xla_scripts(tmp_path: Path):
    _trainer_script(tmp_path, "")
    # A library's class, a name bound to two different things, a class out of reach.
    other = _write(
        tmp_path / "other.py",
        """
        import torch
        from transformers import Trainer as HFTrainer
        from missing import Trainer as Missing
        from trainer import Trainer
        lin = torch.nn.Linear(2, 2)
        lin.train()
        hf = HFTrainer(model=lin)
        hf.train()
        Missing().train()
        t = make()
        t = Trainer if False else None
        t.train(3)
        """,
    )
    assert _found(other) == []
    # Written for XLA by a person: quiet, as for functions.
    xla = _write(
        tmp_path / "xla.py",
        "import torch_xla.debug.metrics as met\nfrom trainer import Trainer\nTrainer(m, [])\n",
    )
    assert _found(xla) == []
    # An unsaved buffer: what is in reach is unknown.
    buffer = analyze("from trainer import Trainer\nTrainer(m, [])\n")
    assert [f for f in buffer.findings if f.code == CODE] == []


def test_each_line_of_a_class_is_named_once_and_modules_stay_bounded(tmp_path: Path):
    _write(tmp_path / "pyproject.toml", "")
    body = ["import torch"]
    for i in range(rule.MAX_MODULES + 2):
        _write(
            tmp_path / f"t{i}.py",
            f"import torch\nclass T{i}:\n    def __init__(self):\n        self.run()\n"
            f"    def run(self):\n        torch.cuda.set_device({i})\n",
        )
        body.append(f"from t{i} import T{i}")
    body += [f"x{i} = T{i}()\nx{i}.run()" for i in range(rule.MAX_MODULES + 2)]
    script = _write(tmp_path / "train.py", "\n".join(body) + "\n")
    found = _found(script)
    # x0.run() adds nothing to T0() (which already runs run()); MAX_MODULES modules at most.
    assert len(found) == rule.MAX_MODULES
    assert all(f.message.startswith(f"T{i}() runs code in t{i}.py") for i, f in enumerate(found))


def test_classes_reaching_many_modules_leave_the_budget_of_called_functions(tmp_path: Path):
    """pysot (held-out 100): the model's and the dataset's classes reach a dozen modules
    (anchors, boxes, augmentations) before the script calls ``load_pretrain``, whose
    ``torch.cuda.current_device()`` and CUDA map_location still need converting."""
    _write(tmp_path / "pyproject.toml", "")
    body = ["import torch", "from model_load import load_pretrain"]
    for i in range(rule.MAX_MODULES + 2):
        _write(
            tmp_path / f"t{i}.py",
            f"import torch\nclass T{i}:\n    def __init__(self):\n        self.run()\n"
            f"    def run(self):\n        torch.cuda.set_device({i})\n",
        )
        body.append(f"from t{i} import T{i}")
    _write(
        tmp_path / "model_load.py",
        "import torch\n\ndef load_pretrain(model, path):\n"
        "    device = torch.cuda.current_device()\n"
        "    state = torch.load(path, map_location=lambda storage, loc: storage.cuda(device))\n"
        "    model.load_state_dict(state, strict=False)\n",
    )
    body += [f"x{i} = T{i}()" for i in range(rule.MAX_MODULES + 2)]
    body.append("load_pretrain(model, path)")
    script = _write(tmp_path / "train.py", "\n".join(body) + "\n")
    found = _found(script)
    assert len(found) == rule.MAX_MODULES + 1
    assert found[-1].message.startswith("load_pretrain() runs code in model_load.py")
    assert "map_location" in found[-1].message


def test_the_class_module_is_read_not_run_and_cached(tmp_path: Path, monkeypatch):
    marker = tmp_path / "ran"
    _write(
        tmp_path / "trainer.py",
        f"""
        import torch
        open({str(marker)!r}, "w").write("ran")
        class Trainer:
            def __init__(self):
                self.device = torch.device("cuda")
        """,
    )
    script = _write(tmp_path / "train.py", "from trainer import Trainer\nTrainer()\n")
    calls = []
    real = helper_evidence._analyse
    monkeypatch.setattr(helper_evidence, "_analyse", lambda *a: calls.append(a) or real(*a))
    assert len(_found(script)) == 1
    assert len(_found(script)) == 1
    assert len(calls) == 1 and not marker.exists()
    (tmp_path / "trainer.py").write_text(
        "import torch\nclass Trainer:\n    def __init__(self, device='cpu'):\n"
        "        self.device = device\n",
        encoding="utf-8",
    )
    assert _found(script) == []


def test_a_generation_helper_that_slices_before_the_start_is_named_at_the_call(tmp_path: Path):
    # The context crop `idx[:, -n:]` of a sibling's generation loop raises on XLA once the
    # prompt is shorter than n (XLA406); the training script only calls the helper.
    _write(
        tmp_path / "chapters.py",
        """
        import torch

        def generate(model, idx, max_new_tokens, context_size):
            for _ in range(max_new_tokens):
                idx_cond = idx[:, -context_size:]
                logits = model(idx_cond)[:, -1, :]
                idx_next = torch.argmax(logits, dim=-1, keepdim=True)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

        def plain_crop(idx, n):
            return idx[:, -n:]
        """,
    )
    script = _write(
        tmp_path / "train.py",
        """
        from chapters import generate, plain_crop

        def sample(model, idx):
            out = generate(model, idx, 10, 256)
            return plain_crop(out, 4)
        """,
    )
    (f,) = _found(script)
    assert f.span.start.line == 3
    assert f.message.startswith("generate() runs code in chapters.py")
    assert "-n" not in f.message  # a crop outside a growing loop is not XLA406's
    assert "line 5: slice start `-context_size`" in f.message and "(XLA406)" in f.message
    assert f.fix is None


def test_a_class_constructed_in_another_modules_constructor_is_followed(tmp_path: Path):
    # held-out 28 (SPADE): Pix2PixTrainer.__init__ builds Pix2PixModel(opt) of another module,
    # whose __init__ builds the VGG loss that calls .cuda(); a function of a third module the
    # constructor calls through its module name is followed the same way.
    _write(
        tmp_path / "models" / "pix2pix_model.py",
        """
        import torch
        from models import losses
        class Pix2PixModel(torch.nn.Module):
            def __init__(self, opt):
                super().__init__()
                self.vgg = losses.make_vgg(opt)
        """,
    )
    _write(tmp_path / "models" / "__init__.py", "")
    _write(
        tmp_path / "models" / "losses.py",
        """
        import torch
        def make_vgg(opt):
            return torch.nn.Linear(2, 2).cuda()
        """,
    )
    _write(
        tmp_path / "trainers" / "trainer.py",
        """
        from models.pix2pix_model import Pix2PixModel
        class Trainer:
            def __init__(self, opt):
                self.model = Pix2PixModel(opt)
        """,
    )
    _write(tmp_path / "trainers" / "__init__.py", "")
    script = _write(
        tmp_path / "train.py",
        """
        from trainers.trainer import Trainer
        trainer = Trainer(None)
        """,
    )
    (f,) = _found(script)
    assert "models/losses.py" in f.message and "line 3: .cuda()" in f.message


def test_a_method_a_method_hands_out_is_read_too(tmp_path: Path):
    # held-out 29 (deeplab-xception): `SegmentationLosses(cuda=...).build_loss(mode)` returns
    # `self.CrossEntropyLoss`, whose body moves the criterion with .cuda().
    _write(
        tmp_path / "utils" / "loss.py",
        """
        import torch.nn as nn
        class SegmentationLosses:
            def __init__(self, cuda=False):
                self.cuda = cuda
            def build_loss(self, mode="ce"):
                return self.CrossEntropyLoss
            def CrossEntropyLoss(self, logit, target):
                criterion = nn.CrossEntropyLoss()
                if self.cuda:
                    criterion = criterion.cuda()
                return criterion(logit, target)
        """,
    )
    _write(tmp_path / "utils" / "__init__.py", "")
    script = _write(
        tmp_path / "train.py",
        """
        from utils.loss import SegmentationLosses
        criterion = SegmentationLosses(cuda=True).build_loss(mode="ce")
        """,
    )
    (f,) = _found(script)
    assert "utils/loss.py" in f.message and "line 10: .cuda()" in f.message


def test_a_workspace_object_held_in_an_attribute_of_the_scripts_class(tmp_path: Path):
    # held-out 29 (deeplab-xception's Trainer keeps `self.saver = Saver(args)`): a method
    # called on the attribute runs the other module's code.
    _write(
        tmp_path / "utils" / "dist.py",
        """
        import torch
        class Setup:
            def bind(self, rank):
                torch.cuda.set_device(rank)
        """,
    )
    _write(tmp_path / "utils" / "__init__.py", "")
    script = _write(
        tmp_path / "train.py",
        """
        from utils.dist import Setup
        class Trainer:
            def __init__(self, rank):
                self.setup = Setup()
                self.setup.bind(rank)
        Trainer(0)
        """,
    )
    (f,) = _found(script)
    assert "self.setup.bind()" in f.message and "utils/dist.py" in f.message


LOADER_UTIL = """
import torch

class DeviceLoader:
    def __init__(self, loader, device="cuda"):
        self.loader, self.device = loader, device

    def __iter__(self):
        for x, y in self.loader:
            yield x.to(self.device), y.to(self.device)

def make_loader(dataset, batch_size, device="cuda"):
    return DeviceLoader(torch.utils.data.DataLoader(dataset, batch_size=batch_size), device=device)
"""


def test_a_later_call_of_the_same_helper_is_pointed_at_the_first(tmp_path):
    # Held-out 32 (efficientdet): the train and the eval loaders come from one helper.
    _write(tmp_path / "pkg" / "loader.py", LOADER_UTIL)
    script = _write(
        tmp_path / "train.py",
        """
        from pkg.loader import make_loader

        def main(ds):
            eval_loader = make_loader(ds, 8, device="xla")
            train_loader = make_loader(ds, 8)
            other = make_loader(ds, 8)
            same = make_loader(ds, 8, device="xla")
        """,
    )
    found = [f for f in analyze(script.read_text(), str(script)).findings if f.code == CODE]
    # The first call passes its own device: it runs nothing to convert, the second is the
    # one that says it all, the third points there, the fourth passes its device too.
    assert [(f.span.start.line, f.severity.name) for f in found] == [
        (4, "WARNING"),
        (5, "INFORMATION"),
    ]
    assert "as the call at line 5 does" in found[1].message
    assert "pkg/loader.py" in found[1].message


ENGINE = """
import torch

def train_one_epoch(model, loader, optimizer, device):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_helper_training_loop_without_a_sync_is_named_at_a_plain_loader_call(tmp_path: Path):
    # held-out 34 (DETR): main.py hands a plain DataLoader to engine.train_one_epoch, whose
    # loop never marks the step; nothing in main.py shows it.
    _write(tmp_path / "engine.py", ENGINE)
    script = _write(
        tmp_path / "main.py",
        """
        import torch
        from engine import train_one_epoch
        def main(model, ds, optimizer, device):
            loader = torch.utils.data.DataLoader(ds, batch_size=4)
            for epoch in range(3):
                train_one_epoch(model, loader, optimizer, device)
        """,
    )
    (f,) = _found(script)
    assert f.span.start.line == 5 and f.fix is None
    assert "train_one_epoch() runs code in engine.py" in f.message
    assert "line 4: training loop never marks the step" in f.message and "(XLA107)" in f.message


def test_a_helper_loop_handed_an_xla_loader_needs_no_sync(tmp_path: Path):
    _write(tmp_path / "engine.py", ENGINE)
    script = _write(
        tmp_path / "main.py",
        """
        import torch
        import torch_xla.distributed.parallel_loader as pl
        from engine import train_one_epoch
        def main(model, ds, optimizer, device):
            loader = pl.MpDeviceLoader(torch.utils.data.DataLoader(ds, batch_size=4), device)
            for epoch in range(3):
                train_one_epoch(model, loader, optimizer, device)
        """,
    )
    assert _found(script) == []


def test_a_helpers_own_helper_is_evidence_one_module_further(tmp_path: Path):
    # held-out 34 (DETR): main.py calls engine.evaluate(), which calls a MetricLogger method of
    # util/misc.py that allocates on "cuda".
    _write(
        tmp_path / "util" / "misc.py",
        """
        import torch
        class MetricLogger:
            def synchronize(self):
                return torch.tensor([1.0], device="cuda")
        """,
    )
    _write(tmp_path / "util" / "__init__.py", "")
    _write(
        tmp_path / "engine.py",
        """
        import util.misc as utils
        def evaluate(model, loader):
            logger = utils.MetricLogger()
            for x in loader:
                model(x)
            logger.synchronize()
        """,
    )
    script = _write(
        tmp_path / "main.py",
        """
        from engine import evaluate
        def main(model, loader):
            evaluate(model, loader)
        """,
    )
    (f,) = _found(script)
    assert "evaluate() runs code in engine.py" in f.message
    assert "line 6: logger.synchronize() runs code in util/misc.py" in f.message


def test_calling_an_instance_of_a_workspace_class_runs_its_call_method(tmp_path: Path):
    # Informer2020's early_stopping(loss, model, path): EarlyStopping.__call__ saves the
    # checkpoint with torch.save in utils/tools.py (held-out 39). A class without __call__
    # (an nn.Module of the workspace) keeps running forward.
    _write(
        tmp_path / "tools.py",
        """
        import torch

        class EarlyStopping:
            def __init__(self, patience):
                self.patience = patience
                self.best = None

            def __call__(self, loss, model, path):
                if self.best is None or loss < self.best:
                    self.best = loss
                    self.save(model, path)

            def save(self, model, path):
                torch.save(model.state_dict(), path + "/checkpoint.pth")
        """,
    )
    script = _write(
        tmp_path / "train.py",
        """
        import torch
        from tools import EarlyStopping

        def train(model, losses, path):
            stopper = EarlyStopping(patience=3)
            for loss in losses:
                stopper(loss, model, path)
        """,
    )
    (found,) = _found(script)
    assert found.span.start.line == 6
    assert found.message.startswith("stopper() (EarlyStopping.__call__) runs code in tools.py")
    assert "line 14:" in found.message and "(XLA108)" in found.message


def test_a_device_chosen_at_a_helper_modules_top_is_named_at_the_calls_that_use_it(
    tmp_path: Path,
):
    # Held-out 40 (deep-text-recognition-benchmark): utils.py, test.py and modules/*.py each
    # start with `device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')` and
    # their functions and modules place on it. The converter is one of two classes (if/else),
    # the model is rebound to its DataParallel wrapper, and its forward runs a module held in
    # self.stn (TPS) whose own method is called through self.grid.
    picker = "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    _write(
        tmp_path / "utils.py",
        picker
        + """
class CTCConverter:
    def encode(self, text):
        return torch.tensor([len(t) for t in text]).to(device)

class AttnConverter:
    def encode(self, text):
        return torch.zeros(len(text), dtype=torch.long).to(device)

def unrelated():
    return 1
""",
    )
    _write(
        tmp_path / "evaluate.py",
        picker + "\ndef validation(model, images):\n    return model(images.to(device))\n",
    )
    _write(
        tmp_path / "modules" / "stn.py",
        picker
        + """
class Grid:
    def build(self, n):
        return torch.zeros(n, 2).to(device)

class STN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.grid = Grid()

    def forward(self, x):
        return x + self.grid.build(x.shape[0]).sum()
""",
    )
    _write(
        tmp_path / "model.py",
        """
        import torch
        from modules.stn import STN

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.stn = STN()
                self.head = torch.nn.Linear(4, 2)

            def forward(self, x):
                return self.head(self.stn(x))
        """,
    )
    script = _write(
        tmp_path / "train.py",
        """
        import torch
        from utils import CTCConverter, AttnConverter, unrelated
        from evaluate import validation
        from model import Model

        def train(opt, images, labels):
            if opt.ctc:
                converter = CTCConverter()
            else:
                converter = AttnConverter()
            model = Model()
            model = torch.nn.DataParallel(model).to("cpu")
            text = converter.encode(labels)
            out = model(images)
            unrelated()
            return validation(model, images), out, text
        """,
    )
    encode, forward, validate = _found(script)
    assert encode.span.start.line == 12
    assert encode.message.startswith(
        "converter.encode() (CTCConverter.encode or AttnConverter.encode) runs code in utils.py"
    )
    assert "line 2: device picker" in encode.message and "(XLA101)" in encode.message
    assert forward.span.start.line == 13
    assert forward.message.startswith("model() (Model.forward) runs code in modules/stn.py")
    assert "line 2:" in forward.message
    assert validate.message.startswith("validation() runs code in evaluate.py that needs")
    assert "line 2: device picker" in validate.message
    # unrelated() reads no module-level device: no finding (three in all, above).


VALIDATION = """
import torch


def val_epoch(epoch, data_loader, model, criterion, device):
    model.eval()
    losses = []
    with torch.no_grad():
        for i, (inputs, targets) in enumerate(data_loader):
            targets = targets.to(device, non_blocking=True)
            outputs = model(inputs)
            losses.append(criterion(outputs, targets))
    return torch.stack(losses).mean()
"""


def test_an_unmoved_batch_field_in_a_helper_loop_is_named_at_the_call(tmp_path: Path):
    # Held-out 85 (3D-ResNets' main.py -> validation.py): DataParallel moved `inputs` on
    # CUDA; on XLA the helper's loop hands the model a CPU tensor whatever main.py does.
    _write(tmp_path / "validation.py", VALIDATION)
    script = _write(
        tmp_path / "main.py",
        """
        import torch
        from validation import val_epoch

        def main(model, loader, device):
            model = torch.nn.DataParallel(model).to(device)
            for epoch in range(3):
                val_epoch(epoch, loader, model, torch.nn.CrossEntropyLoss(), device)
        """,
    )
    (f,) = [f for f in _found(script) if "val_epoch()" in f.message]
    assert "`inputs` goes to the model without being moved" in f.message and "(XLA117)" in f.message


def test_a_fused_optimizer_built_by_a_helper_is_named_at_the_call(tmp_path: Path):
    # Held-out 88 (piano-gpt's setup/backprop.py): `AdamW(..., fused=True)` raises on XLA
    # parameters when it is built (XLA119, an error in the helper's own file).
    _write(
        tmp_path / "backprop.py",
        """
        import torch

        def setup_backprop(model, lr):
            return torch.optim.AdamW(model.parameters(), lr=lr, fused=True)
        """,
    )
    script = _write(
        tmp_path / "train.py",
        """
        import torch
        from backprop import setup_backprop

        def main(model, loader):
            model = model.cuda()
            opt = setup_backprop(model, 1e-3)
            for x in loader:
                loss = model(x.cuda()).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
    )
    (f,) = [f for f in _found(script) if "setup_backprop()" in f.message]
    assert "fused=True" in f.message and "(XLA119)" in f.message


def test_a_helper_module_built_on_the_projects_torch_xla_helpers_is_not_evidence(
    tmp_path: Path,
):
    # Held-out 90 (resnet18_pytorch_jax_tpu): train_pytorch_tpu.py -> trainer.py, whose loop
    # runs over utils' MpDeviceLoader and calls its sync: an XLA program already, not a
    # helper "that needs converting".
    _write(
        tmp_path / "tpu_utils.py",
        """
        import torch_xla.core.xla_model as xm

        def sync_step():
            xm.mark_step()
        """,
    )
    _write(
        tmp_path / "trainer.py",
        """
        import torch
        from tpu_utils import sync_step

        def run_training(model, loader, opt):
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
    )
    script = _write(
        tmp_path / "train.py",
        """
        from trainer import run_training

        def main(model, loader, opt):
            run_training(model, loader, opt)
        """,
    )
    assert _found(script) == []


def test_a_cuda_seed_under_the_availability_test_in_a_helper_is_not_evidence(tmp_path: Path):
    # Held-out 91 (kwt's seed_everything): `if torch.cuda.is_available():
    # torch.cuda.manual_seed_all(seed)` never runs on an XLA host.
    _write(
        tmp_path / "misc.py",
        """
        import random
        import torch

        def seed_everything(seed):
            random.seed(seed)
            torch.manual_seed(seed)
            if torch.cuda.is_available():
                torch.cuda.manual_seed_all(seed)
        """,
    )
    script = _write(
        tmp_path / "train.py",
        """
        import torch
        from misc import seed_everything

        def main(model, loader):
            seed_everything(0)
            model = model.cuda()
        """,
    )
    assert [f for f in _found(script) if "seed_everything()" in f.message] == []


def test_a_helpers_own_save_helper_out_of_sight_is_no_evidence(tmp_path: Path):
    """Held-out 91 (kwt's control): ``misc.save_model`` hands the state to
    ``checkpoint.save_checkpoint``, which copies every tensor to the CPU. Read as a sibling,
    misc's own imports are not followed, so that save is out of sight: no XLA108 evidence.
    A helper that calls ``torch.save`` itself still is."""
    _write(
        tmp_path / "utils" / "checkpoint.py",
        """
        import torch

        def save_checkpoint(state, path):
            torch.save({k: v.detach().cpu() for k, v in state.items()}, path)
        """,
    )
    _write(
        tmp_path / "utils" / "misc.py",
        """
        import torch
        from utils.checkpoint import save_checkpoint

        def save_model(model, path):
            save_checkpoint(model.state_dict(), path)

        def save_raw(model, path):
            torch.save(model.state_dict(), path)
        """,
    )
    script = _write(
        tmp_path / "train.py",
        """
        import torch
        from utils.misc import save_model, save_raw

        def train(model, path):
            save_model(model, path)
        """,
    )
    assert _found(script, None) == []
    script.write_text(script.read_text() + "    save_raw(model, path)\n", encoding="utf-8")
    rule.clear_cache()
    # XLA108 itself follows save_raw to its torch.save (XLA118 leaves that to it).
    (f,) = _found(script, None)
    assert f.code == "XLA108" and f.span.start.line == 5 and "misc.py line 8" in f.message


def test_a_second_call_of_the_same_module_forward_is_pointed_at_the_first(tmp_path):
    # CMC (held-out 119): ``contrast(feat, index)`` in one loop and ``contrast(feat_q, feat_k)``
    # in another both run MemoryMoCo.forward, whose ``.cuda()`` the first call names.
    (tmp_path / "memory.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Memory(nn.Module):\n"
        "    def forward(self, q, k):\n        return (q * k).cuda()\n"
    )
    text = (
        "import torch\nfrom memory import Memory\n\ncontrast = Memory()\n\n\n"
        "def train_a(loader):\n    for q, k in loader:\n        out = contrast(q, k)\n\n\n"
        "def train_b(loader):\n    for q, k in loader:\n        out = contrast(k, q)\n"
    )
    script = tmp_path / "train.py"
    script.write_text(text)
    found = [f for f in analyze(text, str(script)).findings if f.code == "XLA118"]
    assert [f.span.start.line + 1 for f in found] == [9, 14]
    assert found[1].severity == Severity.INFORMATION
    assert "as the call at line 9 does (said there)" in found[1].message


def test_a_helper_a_star_import_binds_is_named_at_the_call(tmp_path: Path):
    # l2p-pytorch (held-out 134): `from engine import *` then `train_and_evaluate(...)`.
    _write(tmp_path / "utils.py", DIST_UTILS)
    _write(tmp_path / "engine.py", "from utils import *\n")
    script = _write(
        tmp_path / "main.py",
        """
        from engine import *
        init_distributed_mode(args)
        """,
    )
    (f,) = _found(script)
    assert f.span.start.line == 1 and "init_distributed_mode() runs code in utils.py" in f.message
    # The script's own definition of the name wins over the star import.
    own = _write(
        tmp_path / "own.py",
        """
        from engine import *
        def init_distributed_mode(args):
            return None
        init_distributed_mode(args)
        """,
    )
    assert _found(own) == []
