"""XLA118: the model a script builds from a module of the project runs its ``forward`` when
it is called (often in another file's loop): CUDA placement there is named where the model is
built, whether the class is constructed, moved as it is built, or made by a factory (also one
picked by name from the module)."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.rules import xla118_workspace_helper as rule
from xla_lens.semantic import workspace, workspace_calls, workspace_classes

from tests.helpers import src

CODE = "XLA118"

NET = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, width=4):
        super().__init__()
        self.fc = nn.Linear(width, 2)

    def make_mask(self, n):
        return torch.ones(n, 4).cuda()

    def forward(self, x):
        mask = self.make_mask(x.shape[0])
        return self.fc(x * mask)

    def sample(self, n):
        return torch.zeros(n).cuda()


def net_small(**kwargs):
    model = Net(width=4, **kwargs)
    return model


def net_large(**kwargs):
    return Net(width=4, **kwargs)
"""

CLEAN_NET = NET.replace(".cuda()", "")

LOOP = """
def train(model, device):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(8, 4, device=device)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    rule.clear_cache()
    workspace_calls.clear_cache()
    workspace.clear_cache()
    workspace_classes.clear_cache()
    yield


def _line(code: str, needle: str) -> int:
    """1-based line of ``needle`` in ``code`` as written (tests never hard-code lines)."""
    return next(i for i, t in enumerate(src(code).splitlines(), 1) if needle in t)


def _write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(src(code), encoding="utf-8")
    return path


def _found(script: Path) -> list:
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    return [f for f in result.findings if f.code == CODE]


@pytest.mark.parametrize(
    ("imports", "build"),
    [
        ("from models.net import Net", "Net().to(device)"),
        ("from models.net import Net", "Net(width=4).cuda().train()"),
        ("from models import net", "net.net_small()"),
        ("from models.net import net_large", "net_large()"),
        ("from models import net", 'net.__dict__["net_" + size]()'),
        ("from models import net", 'getattr(net, "net_" + size)()'),
    ],
)
def test_the_forward_of_a_built_model_is_named_where_it_is_built(
    tmp_path: Path, imports: str, build: str
):
    # ``models`` has no __init__.py: a namespace package, as many projects have.
    _write(tmp_path / "models" / "net.py", NET)
    # The loop that calls the model is in another file, as in many projects (engine.py).
    _write(tmp_path / "engine.py", "import torch\n" + src(LOOP))
    script = _write(
        tmp_path / "train.py",
        f"import torch\n{imports}\nfrom engine import train\nsize = 'small'\ndevice = 'cpu'\n"
        f"model = {build}\ntrain(model, device)\n",
    )
    (f,) = [f for f in _found(script) if "Net" in f.message]
    assert f.span.start.line == 5, f.message
    assert "Net.forward" in f.message and "models/net.py" in f.message
    # make_mask (called by forward) is named; sample(), which nothing here calls, is not.
    assert f"line {_line(NET, 'torch.ones(n, 4).cuda()')}:" in f.message
    assert f"line {_line(NET, 'torch.zeros(n).cuda()')}" not in f.message


def test_a_model_whose_forward_is_clean_is_not_reported(tmp_path: Path):
    _write(tmp_path / "models" / "net.py", CLEAN_NET)
    _write(tmp_path / "engine.py", "import torch\n" + src(LOOP))
    script = _write(
        tmp_path / "train.py",
        "import torch\nfrom models import net\nfrom engine import train\n"
        "model = net.net_small().to('cpu')\ntrain(model, 'cpu')\n",
    )
    assert [f for f in _found(script) if "Net" in f.message] == []


def test_a_model_the_script_calls_itself_is_named_at_that_call(tmp_path: Path):
    _write(tmp_path / "models" / "net.py", NET)
    script = _write(
        tmp_path / "train.py",
        """
        import torch
        from models.net import Net
        model = Net()
        out = model(torch.randn(2, 4))
        """,
    )
    (f,) = _found(script)
    assert f.span.start.line == 3  # 0-based: ``out = model(...)``, as before
    assert f.message.startswith("model() (Net.forward)")


def test_a_factory_that_moves_the_model_itself_keeps_that_evidence(tmp_path: Path):
    module = CLEAN_NET + "\n\ndef build():\n    return Net().cuda()\n"
    _write(tmp_path / "models" / "net.py", module)
    script = _write(
        tmp_path / "train.py",
        "import torch\nfrom models.net import build\nmodel = build()\n",
    )
    (f,) = _found(script)
    assert (
        f.span.start.line == 2 and f"line {_line(module, 'return Net().cuda()')}:" in f.message
    ), f.message


def test_a_name_picked_from_a_module_with_many_models_is_not_guessed(tmp_path: Path):
    many = CLEAN_NET + "".join(
        f"\n\nclass Net{i}(nn.Module):\n    def forward(self, x):\n        return x.cuda()\n"
        for i in range(5)
    )
    _write(tmp_path / "models" / "zoo.py", many.replace("def net_small", "def _small"))
    script = _write(
        tmp_path / "train.py",
        "import torch\nfrom models import zoo\nmodel = getattr(zoo, name)()\n",
    )
    assert _found(script) == []


BLOCKS = """
import torch
from torch import nn


class Block(nn.Module):
    def forward(self, x):
        pad = torch.cuda.FloatTensor(x.size(0), 2).fill_(0)
        return torch.cat((x, pad), 1)


class Unrelated(nn.Module):
    def forward(self, x):
        return x.cuda()


class Pyramid(nn.Module):
    def __init__(self, depth):
        super().__init__()
        block = Block
        self.layers = nn.Sequential(*[block() for _ in range(depth)])

    def forward(self, x):
        return self.layers(x)
"""


def test_the_forward_of_a_block_class_the_model_names_is_followed(tmp_path: Path):
    # Held-out 62's CutMix: PyramidNet builds its layers from `block = Bottleneck`, whose
    # forward pads with torch.cuda.FloatTensor; the model's own forward shows none of it.
    _write(tmp_path / "pyramid.py", BLOCKS)
    script = _write(
        tmp_path / "train.py",
        "import torch\nimport pyramid as P\nmodel = P.Pyramid(3)\nout = model(torch.ones(2, 2))\n",
    )
    (f,) = _found(script)
    assert (
        "Block.forward" in f.message
        and f"line {_line(BLOCKS, 'torch.cuda.FloatTensor')}" in f.message
    )
    assert f"line {_line(BLOCKS, 'return x.cuda()')}" not in f.message  # a class it never names


REGISTRY = """
from .net import Net
from .other import Other

model_dict = {"net": Net, "other": Other}
"""

OTHER = """
import torch.nn as nn


class Other(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""


@pytest.mark.parametrize(
    "build",
    [
        'model_dict["net"]()',
        'model_dict[kind]() if kind == "net" else None',
    ],
)
def test_a_class_picked_from_a_workspace_dict_of_classes_is_followed(tmp_path: Path, build: str):
    # held-out 65's mdistiller: ``distiller_dict[cfg.DISTILLER.TYPE](...)`` under
    # ``if cfg.DISTILLER.TYPE == "CRD":``, the dict in ``distillers/__init__.py``.
    _write(tmp_path / "models" / "__init__.py", REGISTRY)
    _write(tmp_path / "models" / "net.py", NET)
    _write(tmp_path / "models" / "other.py", OTHER)
    _write(tmp_path / "engine.py", "import torch\n" + src(LOOP))
    if " if " in build:
        body = 'if kind == "net":\n    model = model_dict[kind]()\nelse:\n    model = None\n'
    else:
        body = f"model = {build}\n"
    script = _write(
        tmp_path / "train.py",
        "import torch\nfrom models import model_dict\nfrom engine import train\nkind = 'net'\n"
        f"{body}train(model, 'cpu')\n",
    )
    (f,) = [f for f in _found(script) if "Net" in f.message]
    assert "Net.forward" in f.message and "models/net.py" in f.message


def test_a_key_the_script_does_not_pin_picks_nothing_when_the_dict_is_large(tmp_path: Path):
    many = (
        "from .net import Net\n\nmodel_dict = {"
        + ", ".join(f'"n{i}": Net' for i in range(6))
        + "}\n"
    )
    _write(tmp_path / "models" / "__init__.py", many)
    _write(tmp_path / "models" / "net.py", NET)
    _write(tmp_path / "engine.py", "import torch\n" + src(LOOP))
    script = _write(
        tmp_path / "train.py",
        "import torch\nfrom models import model_dict\nfrom engine import train\nimport sys\n"
        "model = model_dict[sys.argv[1]]()\ntrain(model, 'cpu')\n",
    )
    assert [f for f in _found(script) if "Net" in f.message] == []


def test_two_lookups_of_the_same_text_are_judged_at_each_call(tmp_path: Path):
    # mdistiller's train.py writes ``distiller_dict[cfg.DISTILLER.TYPE](...)`` twice, under
    # ``if ... == "NONE":`` and ``if ... == "CRD":``: each call is its own class.
    _write(tmp_path / "models" / "__init__.py", REGISTRY)
    _write(tmp_path / "models" / "net.py", NET)
    _write(tmp_path / "models" / "other.py", OTHER)
    _write(tmp_path / "engine.py", "import torch\n" + src(LOOP))
    script = _write(
        tmp_path / "train.py",
        "import torch\nfrom models import model_dict\nfrom engine import train\nimport sys\n"
        "kind = sys.argv[1]\n"
        'if kind == "other":\n    model = model_dict[kind]()\n'
        'elif kind == "net":\n    model = model_dict[kind]()\n'
        "train(model, 'cpu')\n",
    )
    (f,) = [f for f in _found(script) if "Net" in f.message]
    assert f.span.start.line == 8  # 0-based: the call under ``kind == "net"``


MEMORY = """
import torch
import torch.nn as nn


class Memory(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bank = torch.zeros(n, 4).cuda()


class Distiller(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.build(n)

    def build(self, n):
        self.memory = Memory(n)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""


def test_a_class_of_the_helpers_own_module_it_constructs_is_followed(tmp_path: Path):
    # held-out 65's mdistiller: ``CRD.init_crd_modules`` builds ``ContrastMemory(...)`` of
    # CRD.py, whose ``__init__`` moves to CUDA.
    _write(tmp_path / "models" / "distill.py", MEMORY)
    script = _write(
        tmp_path / "train.py",
        "import torch\nfrom models.distill import Distiller\nmodel = Distiller(8)\n",
    )
    (f,) = _found(script)
    assert "models/distill.py" in f.message
    assert f"line {_line(MEMORY, 'torch.zeros(n, 4).cuda()')}:" in f.message


def test_a_registry_read_through_the_package_module_and_naming_submodule_classes(
    tmp_path: Path,
):
    """simclr-pytorch (held-out 102): ``models.REGISTERED_MODELS[args.problem](args)`` after
    ``import models``, whose ``__init__`` maps names to ``ssl.SimCLR``, a class of a submodule
    it imports; each class the key may pick is followed."""
    _write(
        tmp_path / "models" / "__init__.py",
        "from models import net\nfrom models import other\n\n"
        "REGISTERED_MODELS = {'net': net.Net, 'other': other.Other}\n",
    )
    _write(tmp_path / "models" / "net.py", NET)
    _write(tmp_path / "models" / "other.py", OTHER)
    _write(tmp_path / "engine.py", "import torch\n" + src(LOOP))
    script = _write(
        tmp_path / "train.py",
        "import sys\nimport torch\nimport models\nfrom engine import train\n"
        "model = models.REGISTERED_MODELS[sys.argv[1]]()\ntrain(model, 'cpu')\n",
    )
    (f,) = [f for f in _found(script) if "REGISTERED_MODELS" in f.message]
    assert "models/net.py" in f.message and ".cuda()" in f.message


def test_the_one_function_of_a_module_picked_through_its_dict_is_followed(tmp_path: Path):
    """LLaMA-Adapter (held-out 104): ``models_llama_adapter.__dict__[args.model](args)``; the
    module defines one function, which builds the model under a CUDA default tensor type.
    With two functions the key decides, and nothing is named through the dict."""
    factory = (
        "import torch\n\n\ndef build(args):\n"
        "    torch.set_default_tensor_type(torch.cuda.HalfTensor)\n"
        "    model = torch.nn.Linear(4, 2)\n"
        "    torch.set_default_tensor_type(torch.FloatTensor)\n"
        "    return model\n"
    )
    _write(tmp_path / "factories.py", factory)
    _write(tmp_path / "engine.py", "import torch\n" + src(LOOP))
    script = _write(
        tmp_path / "train.py",
        "import sys\nimport torch\nimport factories\nfrom engine import train\n"
        "model = factories.__dict__[sys.argv[1]](None)\ntrain(model, 'cpu')\n",
    )
    (f,) = [f for f in _found(script) if "factories" in f.message]
    assert f.message.startswith("factories.__dict__[...]() (build) runs code in factories.py")
    assert "default tensor type" in f.message
    rule.clear_cache()
    workspace_calls.clear_cache()
    _write(tmp_path / "factories.py", factory + "\n\ndef other(args):\n    return None\n")
    assert [f for f in _found(script) if "factories" in f.message] == []
