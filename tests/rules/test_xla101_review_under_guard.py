"""XLA101: a device fix left for review under a CUDA availability test names that test too
(held-out 132, CyCLIP: ``ngpus = torch.cuda.device_count()`` then ``if ngpus == 0 or ...:``
picks the CPU; on an XLA host the count is 0, so the branch the fix rewrites never runs)."""

from tests.helpers import findings

GATED = """
import torch

def main(options):
    ngpus = torch.cuda.device_count()
    if ngpus == 0 or options.device == "cpu":
        options.device = "cpu"
        worker(options)
    else:
        options.device = "cuda"
        worker(options)

def worker(options):
    if options.device == "cuda":
        print("on gpu")
    model = torch.nn.Linear(4, 1).to(options.device)
"""


def test_a_review_fix_under_a_device_count_test_names_the_test():
    (f,) = [f for f in findings(GATED, "XLA101") if f.span.start.line == 8]
    assert f.fix is not None and not f.fix.safe
    note = 'it sits under `if ngpus == 0 or options.device == "cpu":`'
    assert note in f.message and note in f.fix.review_reason


def test_a_user_flag_alone_is_not_named_as_a_host_test():
    flag = GATED.replace('ngpus == 0 or options.device == "cpu"', "options.use_cpu")
    (f,) = [f for f in findings(flag, "XLA101") if f.span.start.line == 8]
    assert "it sits under" not in f.message
