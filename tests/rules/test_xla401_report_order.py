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


def test_a_tqdm_or_stream_write_later_in_the_iteration_is_a_line_of_text_too():
    # nerf-pytorch (held-out 69): "Saved Checkpoint" through tqdm.write came out before the
    # deferred validation report.
    for after in ('tqdm.write("saved")', 'sys.stdout.write("saved\\n")'):
        code = STEP.replace(
            "import logging\n", "import logging\nimport sys\nfrom tqdm import tqdm\n"
        )
        (f,) = findings(code.replace("{after}", after), "XLA401")
        assert not f.fix.safe and "out of order" in f.fix.review_reason, after


def test_a_report_reading_the_clock_would_tell_the_time_of_the_sync():
    # nerf-pytorch (held-out 69): `" Time: " + str(time.time() - start)` in the deferred report
    # would count what runs after it (a checkpoint write) until the step's sync.
    code = (
        STEP.replace("import logging\n", "import logging\nimport time\n")
        .replace(
            'logger.info(f"step {step} loss {loss:.4f}")',
            'logger.info(f"step {step} loss {loss:.4f} took {time.time() - start:.1f}s")',
        )
        .replace("{after}", "best = best + 1")
        .replace(
            "def train(model, loader, optimizer, run, best):",
            "def train(model, loader, optimizer, run, best, start):",
        )
    )
    (f,) = findings(code, "XLA401")
    assert not f.fix.safe
    assert f.fix.review_reason.startswith(
        "it reads the clock (`time.time()`) when the closure runs"
    )


WANDB_STEP = """
import torch
import torch_xla
import wandb


def train(model, loader, optimizer, validate, validate_every):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        if step % 5 == 0:
            wandb.log({"train/loss": loss.item()}, step=step)
        if step % validate_every == 0:
            wandb.log({"val/loss": validate(model)}, step=step + 1)
        torch_xla.sync()
"""


def test_a_deferred_wandb_log_before_another_wandb_log_is_a_review():
    """Held-out 81, AdaBins: the train loss logged at ``step=step`` ran, deferred, after the
    validation log at ``step=step + 1``: wandb drops a log to an earlier step (lost data)."""
    (f,) = findings(WANDB_STEP, "XLA401")
    assert not f.fix.safe and "wandb drops a log to an earlier step" in f.fix.review_reason
    alone = WANDB_STEP.replace(
        'wandb.log({"val/loss": validate(model)}, step=step + 1)', "print(validate(model))"
    )
    (f,) = findings(alone, "XLA401")
    assert f.fix.safe  # a print is no wandb log; a metrics dict is no line of text
