"""A script that already runs on XLA through its own ``--device xla`` mode (held-out 53's
control, hfta's pointnet): ``device = xm.xla_device() if args.device == "xla" else
torch.device(args.device)``. Its ``if args.device == "cuda":`` blocks are the CUDA mode, left
alone (removing ``cudnn.benchmark`` there changed what a CUDA run does); its ``--device``
default needs no change (the user passes ``xla``); a report after the step's
``xm.optimizer_step(barrier=True)`` would run a step late in a closure, and never in the CPU
and CUDA modes."""

from xla_lens.rules.base import Severity

from tests.helpers import findings, src

MODES = src("""
import argparse
import torch
import torch.cuda.amp as amp

try:
    import torch_xla.core.xla_model as xm
except ImportError:
    pass


def main(args):
    if args.device == "cuda":
        assert torch.cuda.is_available()
        torch.backends.cudnn.benchmark = True
    device = xm.xla_device() if args.device == "xla" else torch.device(args.device)
    model = torch.nn.Linear(4, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = amp.GradScaler(enabled=(args.device == "cuda" and args.amp))
    for step in range(args.steps):
        x = torch.randn(8, 4).to(device)
        optimizer.zero_grad()
        if args.device == "cuda":
            with amp.autocast(enabled=args.amp):
                loss = model(x).pow(2).mean()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
        else:
            loss = model(x).pow(2).mean()
            loss.backward()
            if args.device == "xla":
                xm.optimizer_step(optimizer, barrier=True)
            else:
                optimizer.step()
        print("loss", loss.item())
        scaler.update()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda", choices=["cpu", "cuda", "xla"])
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--steps", type=int, default=3)
    main(parser.parse_args())
""")


def test_the_cuda_mode_blocks_and_the_device_option_are_left_alone():
    for code in ("XLA403", "XLA102", "XLA101"):
        reported = [f for f in findings(MODES, code) if f.severity != Severity.INFORMATION]
        assert reported == [], code


def test_a_report_after_the_steps_barrier_keeps_its_fix_for_review():
    (read,) = findings(MODES, "XLA401")
    assert read.fix is not None and not read.fix.safe
