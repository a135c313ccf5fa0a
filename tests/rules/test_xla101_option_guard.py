"""XLA101 on a ``--device`` option read behind a CUDA availability test
(``torch.device(args.device if torch.cuda.is_available() else "cpu")``, held-out 37's
segmentation trainer): the default's fix drops the test too, or every XLA host (which has no
CUDA) keeps training on the CPU while the script looks converted (GUIDE.md I, "rewriting only
the assignment keeps the guard")."""

from xla_lens.rules.base import Severity

from tests.helpers import findings, fixed


def _warnings(code: str):
    return [f for f in findings(code, "XLA101") if f.severity == Severity.WARNING]


OPTION = """
import argparse
import torch


def main(args):
    device = {picker}
    model = torch.nn.Linear(4, 1).to(device)
    return model


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda", help="training device")
    main(parser.parse_args())
"""


def _code(picker: str, extra: str = "") -> str:
    return OPTION.replace("{picker}", picker).replace(
        "    return model\n", extra + "    return model\n"
    )


def test_the_default_and_the_availability_test_change_together() -> None:
    code = _code('torch.device(args.device if torch.cuda.is_available() else "cpu")')
    picker, f = findings(code, "XLA101")  # in source order
    assert "torch_xla.device(); line 6 uses it only where CUDA is available" in f.message
    # The picker, where a reader looks for the device, says so too: no fix of its own.
    assert picker.severity == Severity.INFORMATION and picker.fix is None
    assert picker.span.start.line + 1 == 6 and picker.span.start.col == 26
    assert "`args.device` is used only where CUDA is available" in picker.message
    assert "the fix of --device (line 13, XLA101)" in picker.message
    assert f.fix is not None and f.fix.safe
    out = fixed(code, "XLA101")
    assert "device = torch.device(args.device)\n" in out
    assert 'default="xla"' in out and "import torch_xla" in out


def test_the_negated_test_and_a_device_on_each_side_are_the_same_picker() -> None:
    code = _code(
        'torch.device("cpu") if not torch.cuda.is_available() else torch.device(args.device)'
    )
    out = fixed(code, "XLA101")
    assert "device = torch.device(args.device)\n" in out


def test_another_test_of_the_same_availability_makes_it_a_review() -> None:
    # ``if torch.cuda.is_available(): model = DDP(...)``-like code still decides by CUDA: the
    # XLA device alone would leave it behind, so the change is offered for review.
    code = _code(
        'torch.device(args.device if torch.cuda.is_available() else "cpu")',
        "    if torch.cuda.is_available():\n        model = model.half()\n",
    )
    (f,) = _warnings(code)
    assert f.fix is not None and not f.fix.safe
    assert "torch.device(args.device if torch.cuda.is_available()" in fixed(code, "XLA101")


def test_a_plain_read_of_the_option_changes_only_the_default() -> None:
    code = _code("torch.device(args.device)")
    (f,) = findings(code, "XLA101")  # no test: nothing said at the picker
    assert "uses it only where" not in f.message
    assert f.fix is not None and f.fix.safe
    assert "device = torch.device(args.device)\n" in fixed(code, "XLA101")


def test_a_test_that_names_no_plain_side_is_left_as_it_is() -> None:
    # ``device_count() == 0`` puts the option on the side taken WITHOUT CUDA: not this idiom.
    code = _code('torch.device(args.device if torch.cuda.device_count() == 0 else "cpu")')
    assert "device_count() == 0" in fixed(code, "XLA101")
