"""XLA401's step-closure fix defers a report to the step's sync: a line of text that used to
come out before another print or log line of the same iteration would come out after it
(held-out 42, hubert: "valid -- epoch ..." after "new best model found!"). Such a fix needs
review; a later message in another branch of the same ``if``, or a metrics tracker's
``run.log({...})``, changes no order."""

from tests.helpers import findings

STEP = """
import logging

import torch
import torch_xla

logger = logging.getLogger(__name__)


def train(model, loader, optimizer, run, best):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            logger.info(f"step {step} loss {loss:.4f}")
            {after}
        torch_xla.sync()
"""


def _fix(after: str):
    (f,) = findings(STEP.replace("{after}", after), "XLA401")
    assert f.fix is not None
    return f.fix


def test_a_later_message_of_the_iteration_makes_the_deferred_report_a_review():
    for after in ('print("saved")', 'logger.info("new best model found")'):
        fix = _fix(after)
        assert not fix.safe
        assert "out of order" in fix.review_reason, fix.review_reason


def test_no_later_message_keeps_the_deferred_report_safe():
    fix = _fix("best = best + 1")
    assert fix.safe, fix.review_reason


def test_a_metrics_tracker_is_no_line_of_text():
    fix = _fix('run.log({"lr": optimizer.param_groups[0]["lr"]}, step=step)')
    assert fix.safe, fix.review_reason


def test_a_message_in_the_other_branch_never_runs_in_the_same_pass():
    code = STEP.replace(
        '            logger.info(f"step {step} loss {loss:.4f}")\n            {after}\n',
        '            logger.info(f"step {step} loss {loss:.4f}")\n'
        "        else:\n"
        '            print("no report this step")\n',
    )
    (f,) = findings(code, "XLA401")
    assert f.fix is not None and f.fix.safe, f.fix.review_reason
