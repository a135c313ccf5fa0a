"""An accelerate script written for DeepSpeed and torch.distributed (held-out 52, MOSS's ZeRO-3
fine-tune). On XLA accelerate sets up neither (accelerate/state.py: no process group and no
DeepSpeed when the backend is "xla"), so three things there raise: its config poke through
``deepspeed_plugin`` (None), the engine's ``save_checkpoint`` (the prepared model is the plain
module) and a bare ``dist.all_reduce`` (no default process group)."""

from tests.helpers import findings, src

MOSS_LIKE = src("""
import torch
import torch.distributed as dist
from accelerate import Accelerator


class Metric:
    def __init__(self, device):
        self.right = torch.tensor(0, device=device)

    def get(self):
        dist.all_reduce(self.right, op=dist.ReduceOp.SUM)
        return self.right.item()


def train(args):
    accelerator = Accelerator()
    accelerator.state.deepspeed_plugin.deepspeed_config["train_micro_batch_size_per_gpu"] = 2
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.AdamW(model.parameters())
    model, optimizer = accelerator.prepare(model, optimizer)
    metric = Metric(accelerator.device)
    for step in range(3):
        loss = model(torch.randn(8, 4, device=accelerator.device)).sum()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        print(metric.get())
        model.save_checkpoint(args.output_dir, step)
""")


def _at(code: str, text: str) -> int:
    return next(i for i, line in enumerate(code.splitlines()) if text in line)


def test_the_deepspeed_plugin_and_engine_methods_are_reported():
    lines = {f.span.start.line: f for f in findings(MOSS_LIKE, "XLA405")}
    plugin = lines[_at(MOSS_LIKE, "deepspeed_plugin.deepspeed_config")]
    assert "is None where accelerate runs on XLA" in plugin.message and plugin.fix is None
    save = lines[_at(MOSS_LIKE, "model.save_checkpoint")]
    assert "accelerator.save_state" in save.manual


def test_an_unguarded_collective_is_reported_with_accelerates_operation():
    (f,) = [f for f in findings(MOSS_LIKE, "XLA205") if "all_reduce" in f.message]
    assert f.span.start.line == _at(MOSS_LIKE, "dist.all_reduce")
    assert 'accelerator.reduce(tensor, reduction="sum")' in f.manual


def test_a_script_that_builds_its_own_group_keeps_its_collectives():
    code = MOSS_LIKE.replace(
        "    accelerator = Accelerator()\n",
        '    dist.init_process_group("xla", init_method="xla://")\n    accelerator = Accelerator()\n',
    )
    assert [f for f in findings(code, "XLA205") if "all_reduce" in f.message] == []


def test_a_none_test_of_the_plugin_and_a_plain_model_method_are_fine():
    code = MOSS_LIKE.replace(
        '    accelerator.state.deepspeed_plugin.deepspeed_config["train_micro_batch_size_per_gpu"] = 2\n',
        "    if accelerator.state.deepspeed_plugin is not None:\n        pass\n",
    ).replace(
        "model.save_checkpoint(args.output_dir, step)", "accelerator.save_state(args.output_dir)"
    )
    assert findings(code, "XLA405") == []


def test_a_plugin_read_under_a_deepspeed_test_is_fine():
    # peft's ZeRO-3 example: ``if getattr(accelerator.state, "deepspeed_plugin", None):``.
    code = MOSS_LIKE.replace(
        '    accelerator.state.deepspeed_plugin.deepspeed_config["train_micro_batch_size_per_gpu"] = 2\n',
        '    if getattr(accelerator.state, "deepspeed_plugin", None):\n'
        "        zero3 = accelerator.state.deepspeed_plugin.zero_stage == 3\n",
    )
    assert [f for f in findings(code, "XLA405") if "deepspeed_plugin" in f.message] == []
