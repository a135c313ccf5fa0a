"""XLA118 follows a method called on an object a workspace class holds: ``for meter in
self.meters.values(): meter.sync()`` runs the items' class's method (a metric logger's
cross-process sync that allocates on ``device="cuda"``, two calls below the script)."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.rules import xla118_workspace_helper as rule
from xla_lens.semantic import workspace, workspace_calls, workspace_classes

from tests.helpers import src

CODE = "XLA118"

METERS = """
from collections import defaultdict

import torch
import torch.distributed as dist


class RunningValue:
    def __init__(self):
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.count += n
        self.total += value * n

    def sync(self):
        if not (dist.is_available() and dist.is_initialized()):
            return
        t = torch.tensor([self.count, self.total], dtype=torch.float64, device="cuda")
        dist.all_reduce(t)
        self.count, self.total = int(t[0].item()), t[1].item()


class Plain:
    def sync(self):
        return None


class Meters:
    def __init__(self):
        self.meters = {CONTAINER}

    def add_meter(self, name, meter):
        self.meters[name] = meter

    def update(self, **values):
        for name, value in values.items():
            self.meters[name].update(value)

    def sync(self):
        for meter in self.meters.values():
            meter.sync()

    def sync_one(self, name):
        self.meters[name].sync()

    def sync_fresh(self):
        value = RunningValue()
        value.sync()

    def sync_maybe(self, value):
        if value is None:
            value = RunningValue()
        value.sync()
"""

ENGINE = """
import utils


def train_one_epoch(model, loader, optimizer):
    meters = utils.Meters()
    for x, y in loader:
        loss = model(x, y)
        meters.update(loss=loss.item())
    meters.{METHOD}
    return meters
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    rule.clear_cache()
    workspace_calls.clear_cache()
    workspace.clear_cache()
    workspace_classes.clear_cache()
    yield


def _found(tmp_path: Path, container: str, method: str = "sync()"):
    (tmp_path / "utils.py").write_text(src(METERS).replace("{CONTAINER}", container))
    script = tmp_path / "engine.py"
    script.write_text(src(ENGINE).replace("{METHOD}", method))
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    return [f for f in result.findings if f.code == CODE]


@pytest.mark.parametrize("method", ["sync()", 'sync_one("loss")'])
def test_a_metric_sync_through_a_defaultdict_of_meters_is_named_at_the_call(tmp_path, method):
    (f,) = _found(tmp_path, "defaultdict(RunningValue)", method)
    assert f.span.start.line == 8 and f.fix is None
    assert f"meters.{method.split('(')[0]}() (Meters." in f.message
    assert "runs code in utils.py" in f.message
    assert "line 19:" in f.message and 'device="cuda"' in f.message and "(XLA101)" in f.message


def test_items_of_a_class_with_no_cuda_code_give_no_finding(tmp_path):
    assert _found(tmp_path, "defaultdict(Plain)") == []


@pytest.mark.parametrize(
    "container",
    [
        "{}",  # items only passed in: their class is unknown
        "defaultdict(lambda: RunningValue())",  # a factory it does not read
        "make_meters()",  # a container built elsewhere
    ],
)
def test_an_unknown_item_class_is_not_guessed(tmp_path, container):
    assert _found(tmp_path, container) == []


def test_items_built_from_two_classes_are_not_guessed(tmp_path):
    meters = src(METERS).replace("{CONTAINER}", "defaultdict(RunningValue)")
    meters = meters.replace(
        "        self.meters[name] = meter\n", "        self.meters[name] = Plain()\n"
    )
    (tmp_path / "utils.py").write_text(meters)
    script = tmp_path / "engine.py"
    script.write_text(src(ENGINE).replace("{METHOD}", "sync()"))
    result = analyze(script.read_text(), str(script))
    assert [f for f in result.findings if f.code == CODE] == []


def test_a_local_object_the_method_builds_is_followed(tmp_path):
    (f,) = _found(tmp_path, "{}", "sync_fresh()")
    assert "meters.sync_fresh() (Meters.sync_fresh)" in f.message and "line 19:" in f.message


def test_a_receiver_that_may_come_from_the_caller_is_not_followed(tmp_path):
    assert _found(tmp_path, "{}", "sync_maybe(None)") == []
