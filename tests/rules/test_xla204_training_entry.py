"""XLA204 wraps the function that trains, never merely the guard's last call (held-out llm.c:
the `__main__` block is the whole program and ends with `print0("peak memory ...")`; wrapping
that print left the training in the launcher's parent, which then crashed the launch with
"Runtime is already initialized")."""

from __future__ import annotations

from xla_lens.rules.xla204_mp_fn import guard_entry
from xla_lens.semantic.model import ScriptModel

from tests.helpers import findings, fixed, src

TRAINING_IN_GUARD = """
import os
import torch
from torch.distributed import init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP


def print0(*args):
    if int(os.environ.get("RANK", 0)) == 0:
        print(*args)


if __name__ == "__main__":
    ddp = int(os.environ.get("RANK", -1)) != -1
    if ddp:
        init_process_group(backend="nccl")
    model = torch.nn.Linear(4, 1).to("cuda")
    if ddp:
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(8, 4, device="cuda")).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    print0("done")
"""


def _model(text: str) -> ScriptModel:
    import ast

    code = src(text)
    return ScriptModel(code, ast.parse(code))


def test_training_in_the_guard_gets_no_launcher_fix_and_says_to_move_it_into_main():
    (f,) = findings(TRAINING_IN_GUARD, "XLA204")
    assert f.fix is None, f.fix
    assert "_mp_fn, args=" not in f.message and "print0" not in f.message
    assert f.manual is not None and "main()" in f.manual and "__main__" in f.manual
    assert guard_entry(_model(TRAINING_IN_GUARD)) is None
    # Nothing in the guard is wrapped, even with every review fix accepted.
    converted = fixed(TRAINING_IN_GUARD, "XLA204", unsafe=True)
    assert "_mp_fn" not in converted and "torch_xla.launch" not in converted


def test_the_entry_is_the_call_that_trains_not_the_last_call():
    code = """
    import torch
    import torch.distributed as dist

    def print0(*args):
        print(*args)

    def main():
        dist.init_process_group("nccl")
        model = torch.nn.Linear(4, 1).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            loss = model(torch.randn(8, 4).cuda()).sum()
            loss.backward()
            opt.step()

    if __name__ == "__main__":
        main()
        print0("done")
    """
    (f,) = findings(code, "XLA204")
    assert f.fix is not None and "torch_xla.launch(_mp_fn)" in f.fix.title, f.fix.title
    assert guard_entry(_model(code)) == "main"
    converted = fixed(code, "XLA204", unsafe=True)
    assert "def _mp_fn(index):\n    main()" in converted
    assert '    torch_xla.launch(_mp_fn)\n    print0("done")' in converted


def test_a_last_call_that_does_not_reach_the_training_loop_is_not_the_entry():
    code = """
    import torch
    import torch.distributed as dist

    def report(text):
        print(text)

    def train():
        model = torch.nn.Linear(4, 1).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            model(torch.randn(8, 4).cuda()).sum().backward()
            opt.step()

    if __name__ == "__main__":
        dist.init_process_group("nccl")
        report("start")
        for epoch in range(2):
            train()
        report("done")
    """
    (f,) = findings(code, "XLA204")
    assert f.fix is None and "main()" in (f.manual or "")


def test_a_plain_main_call_is_still_wrapped():
    code = """
    import torch
    import torch.distributed as dist

    def main():
        dist.init_process_group("nccl")
        model = torch.nn.Linear(4, 1).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            model(torch.randn(8, 4).cuda()).sum().backward()
            opt.step()

    if __name__ == "__main__":
        main()
    """
    (f,) = findings(code, "XLA204")
    assert f.fix is not None, f.message
    assert guard_entry(_model(code)) == "main"


def test_code_of_a_guard_that_trains_itself_is_not_called_launcher_parent_code():
    # Held-out 9 (microsoft/LoRA gpt2_ft.py:326): the whole program is the guard, started by
    # torchrun. No fix adds a launcher, and following XLA204's advice moves this code into the
    # function the launcher starts: the device fixes there are not "in the launcher's parent".
    device_fixes = [f for f in findings(TRAINING_IN_GUARD, "XLA101") if f.fix is not None]
    assert device_fixes
    for f in device_fixes:
        assert "launcher's parent" not in f.message, f.message
        assert f.fix.safe, f.fix.review_reason
    converted = fixed(TRAINING_IN_GUARD, "XLA101")
    assert '.to("cuda")' not in converted and 'device="cuda"' not in converted


MODULE_LEVEL_BESIDE_GUARD = """
import torch
import torch.distributed as dist

device = torch.device("cuda")

if __name__ == "__main__":
    dist.init_process_group(backend="nccl")
    model = torch.nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
"""


def test_module_level_code_outside_the_guard_stays_the_launcher_parent():
    # Moving the guard into a function leaves this line at module level: the parent runs it.
    (f,) = [f for f in findings(MODULE_LEVEL_BESIDE_GUARD, "XLA101") if f.span.start.line == 3]
    assert f.fix is not None and not f.fix.safe
    assert "launcher's parent" in f.fix.review_reason


def test_a_cli_library_handed_the_training_function():
    """``fire.Fire(main)`` (held-out 80's po2_quantization): main() trains, with the arguments
    Fire parses; the block does not train itself, and each replica can parse them too."""
    text = """
    import fire
    import torch
    import torch.distributed as dist

    def main(epochs: int = 3):
        dist.init_process_group(backend="nccl")
        model = torch.nn.Linear(2, 2).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(epochs):
            model(torch.ones(1, 2).cuda()).sum().backward()
            opt.step()

    if __name__ == "__main__":
        fire.Fire(main)
    """
    (f,) = findings(text, "XLA204")
    assert "block itself" not in f.message
    assert "hands the training function to `fire.Fire(main)`" in f.message
    assert f.manual.startswith("define def _mp_fn(index): fire.Fire(main)")
