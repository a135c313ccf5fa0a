"""XLA401 with XLA107's sync placed before a `continue` (parts/sync_point.py): a host read in
the once-per-tick block after it must not become a step closure that the final `break`
iteration never runs."""

from tests.helpers import fixed

TICK_REPORT = """
import torch
it = 0
while True:
    err = net(next(data)).abs().mean()
    optim.zero_grad()
    err.backward()
    optim.step()
    it += 1
    last = it >= 60
    if not last and it % 20 != 0:
        continue
    print("report", it, err.item())
    if last:
        break
"""


def test_a_report_after_the_continue_is_not_deferred_past_the_last_sync():
    out = fixed(TICK_REPORT)
    assert "    torch_xla.sync()\n    if not last and it % 20 != 0:\n" in out
    assert "add_step_closure" not in out  # unpatched closure_timing wraps it: last report lost
