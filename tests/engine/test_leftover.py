"""What Convert/`fix` say is left: a device finding with a review fix keeps the script off XLA;
one with no fix is for the person to check; information findings are not blockers."""

from xla_lens.engine import analyze
from xla_lens.engine.fixing import fix_source
from xla_lens.engine.leftover import CLI_REVIEW, leftover

from tests.helpers import src


def _left(text: str):
    out = fix_source(src(text), target="modern")
    assert out.error is None
    return leftover(list(analyze(out.source, target="modern").findings))


def test_a_device_choice_waiting_for_review_keeps_the_script_off_xla():
    left = _left(
        """
        import argparse
        import torch
        p = argparse.ArgumentParser()
        p.add_argument("--device", default="cpu", help="cpu or cuda")
        args = p.parse_args()
        model = torch.nn.Linear(4, 1).to(args.device)
        torch.cuda.synchronize()
        """
    )
    assert [f.code for f in left.off_device] == ["XLA101"] and not left.device_by_hand
    assert "does not reach the XLA device yet: see line" in left.statement(CLI_REVIEW)


def test_a_cuda_index_read_as_a_number_is_checked_by_hand_not_called_off_device():
    left = _left(
        """
        import torch
        def worker(gpu, args):
            args.gpu = gpu
            if args.gpu is not None:
                print("rank", args.gpu + 1)
            model = torch.nn.Linear(4, 1).cuda()
        """
    )
    assert not left.off_device, left.off_device
    assert [f.code for f in left.device_by_hand] == ["XLA101"]
    text = left.statement(CLI_REVIEW)
    assert (
        "does not reach" not in text and "Check the device by hand at line 4 (XLA101)" in text
    )  # below the import
