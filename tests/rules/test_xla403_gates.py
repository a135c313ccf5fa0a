"""XLA403 on availability requirements: gates that stop a script without CUDA (directly,
through a flag, through a helper), and torch.accelerator's forms of the torch.cuda idioms."""

from __future__ import annotations

from tests.helpers import findings, fixed, src


def _gates(code: str):
    return [f for f in findings(code, "XLA403") if "stops the script" in f.message]


def test_direct_gates_are_removed_safely():
    code = """
    import sys
    import torch

    def main():
        # GPUs only
        if not torch.cuda.is_available():
            raise RuntimeError("this trainer needs a GPU")
        if not torch.accelerator.is_available():
            print("no accelerator found")
            sys.exit(1)
        train()
    """
    found = _gates(code)
    assert [f.span.start.line + 1 for f in found] == [6, 8]
    assert all(f.fix is not None and f.fix.safe for f in found)
    assert "torch.accelerator knows no XLA device" in found[1].message
    assert fixed(code, "XLA403") == src(
        """
        import sys
        import torch

        def main():
            # GPUs only
            train()
        """
    )


def test_a_flag_bound_once_counts_as_the_answer():
    code = """
    import torch

    has_gpu = torch.cuda.is_available()
    if not has_gpu:
        exit("CUDA required")
    flag = torch.cuda.is_available()
    flag = flag and fast_mode
    if not flag:
        exit()
    """
    (f,) = _gates(code)
    assert f.span.start.line + 1 == 4 and f.fix.safe


def test_gates_that_ask_more_or_carry_an_else_get_no_fix():
    code = """
    import sys
    import torch

    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        sys.exit("needs two GPUs")
    if not torch.accelerator.is_available():
        raise SystemExit("no accelerator")
    else:
        print("accelerator found")
    """
    found = _gates(code)
    assert [f.span.start.line + 1 for f in found] == [4, 6]
    assert all(f.fix is None and f.manual for f in found)
    assert "one-GPU host" in found[0].manual and "else" in found[1].manual


def test_a_gate_inside_a_try_is_for_review():
    code = """
    import sys
    import torch

    try:
        if not torch.cuda.is_available():
            sys.exit(2)
        use_gpu = True
    except SystemExit:
        use_gpu = False
    """
    (f,) = _gates(code)
    assert not f.fix.safe and "line 4" in f.fix.review_reason


def test_a_helper_answering_with_availability_is_reported_in_the_helper():
    code = """
    import sys
    import torch

    def enough_devices(minimum=2):
        usable = torch.accelerator.is_available()
        return usable and torch.accelerator.device_count() >= minimum

    if __name__ == "__main__":
        if not enough_devices(minimum=2):
            print("not enough devices")
            sys.exit()
        run()
    """
    by_line = {f.span.start.line + 1: f for f in findings(code, "XLA403")}
    gate = by_line[5]
    assert gate.fix is None and "line 9" in gate.message and "enough_devices()" in gate.message
    assert "Drop the GPU requirement at line 9" in gate.manual
    assert "device_count" in by_line[6].message  # the count, reported as before


def test_fallbacks_and_returns_are_not_requirements():
    code = """
    import torch

    def exit():
        print("bye")

    def pick():
        if not torch.cuda.is_available():
            print("using CPU, this will be slow")
        if not torch.cuda.is_available():
            return None
        if not torch.cuda.is_available():
            exit()
        if torch.cuda.is_available():
            if not torch.cuda.is_available():
                raise RuntimeError("unreachable")
        return "cuda"
    """
    assert _gates(code) == []


def test_accelerator_forms_match_the_cuda_ones():
    code = """
    import torch

    assert torch.accelerator.is_available(), "needs an accelerator"
    if torch.accelerator.is_available():
        torch.cuda.empty_cache()
    if torch.accelerator.is_available():
        replicas = torch.accelerator.device_count()
    if torch.accelerator.is_available():
        torch.accelerator.synchronize()
    """
    by_line = {f.span.start.line + 1: f for f in findings(code, "XLA403")}
    assert by_line[3].fix.safe and "torch.accelerator knows no XLA device" in by_line[3].message
    assert by_line[4].fix.safe and "block" in by_line[4].fix.title
    assert by_line[7].fix is None and "runs only when" in by_line[7].message
    assert 9 not in by_line and 10 not in by_line  # the CUDA run may need its synchronize
    assert fixed(code, "XLA403") == src(
        """
        import torch

        if torch.accelerator.is_available():
            replicas = torch.accelerator.device_count()
        if torch.accelerator.is_available():
            torch.accelerator.synchronize()
        """
    )


def test_a_gate_with_a_later_device_count_is_for_review():
    # As for the assert: without the gate, device_count() is 0 on an XLA host and the spawn
    # starts no process; the script would exit 0 having trained nothing.
    code = """
    import sys
    import torch
    import torch.multiprocessing as mp

    def main():
        if not torch.cuda.is_available():
            sys.exit("needs a GPU")
        gpus = torch.cuda.device_count()
        mp.spawn(train, nprocs=gpus)
    """
    (f,) = _gates(code)
    assert f.fix is not None and not f.fix.safe
    assert "line 8: torch.cuda.device_count() is 0 on an XLA host" in f.fix.review_reason
    assert "line 8" in f.message
    assert "if not torch.cuda.is_available():" in fixed(code, "XLA403")


def test_an_availability_branch_whose_else_stops_is_reported_without_a_fix():
    # held-out 10 r1 (DINO's init_distributed_mode): on an XLA host the elif is False and the
    # else exits before training.
    code = """
    import os
    import sys
    import torch

    def setup(args):
        if "RANK" in os.environ:
            args.rank = int(os.environ["RANK"])
        elif torch.cuda.is_available():
            args.rank = 0
        else:
            print("needs a GPU")
            sys.exit(1)
    """
    (f,) = [f for f in findings(code, "XLA403") if "else branch" in f.message]
    assert f.fix is None and f.span.start.line == 7
    assert "`elif torch.cuda.is_available():` (line 8)" in f.message
    assert "drop the availability test" in f.manual


def test_an_availability_branch_whose_else_goes_on_is_no_stop():
    code = """
    import torch

    if torch.cuda.is_available():
        print("gpu")
    else:
        print("cpu")
    """
    assert [f for f in findings(code, "XLA403") if "else branch" in f.message] == []


def test_a_requirement_only_when_the_flag_asks_for_the_device():
    """Held-out 81's matting trainer: ``if args.cuda and not torch.cuda.is_available(): raise``
    with the ``--cuda`` flag the converted script needs: it stops every such run; keeping
    ``args.cuda`` alone would too, so the advice drops the whole requirement."""
    text = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", action="store_true")
    args = parser.parse_args()
    if args.cuda and not torch.cuda.is_available():
        raise Exception("No GPU found, please run without --cuda")
    """
    (f,) = [f for f in findings(text, "XLA403") if f.span.start.line + 1 == 6]
    assert f.fix is None and "whenever `args.cuda` holds" in f.message
    assert "the whole `if`" in f.manual
