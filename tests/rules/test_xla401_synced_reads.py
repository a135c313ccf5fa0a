"""XLA401: a read of a value the step's sync already computed compiles and runs nothing
(held-out 114's LLaVA control: ``xm.mark_step(); optimizer.zero_grad(); print(loss.item())``,
measured there: 3 executions with or without the read)."""

from __future__ import annotations

from tests.helpers import findings, src

LOOP = src("""
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

device = torch_xla.device()
model = torch.nn.Linear(2, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(3):
    loss = model(torch.randn(4, 2, device=device)).sum()
    loss.backward()
    optimizer.step()
    xm.mark_step()
    optimizer.zero_grad()
    READ
print(met.short_metrics_report())
""")


def test_a_read_after_the_steps_sync_is_not_reported():
    assert (
        findings(LOOP.replace("READ", 'print(f"step {i}", loss.detach().cpu().item())'), "XLA401")
        == []
    )


def test_a_periodic_read_after_the_sync_is_not_reported_either():
    text = LOOP.replace("READ", "if i % 10 == 0:\n        print(loss.item())")
    assert findings(text, "XLA401") == []


def test_a_read_of_a_value_bound_again_after_the_sync_is():
    text = LOOP.replace("READ", "loss = loss * 2\n    print(loss.item())")
    assert [f.code for f in findings(text, "XLA401")] == ["XLA401"]


def test_a_read_before_the_sync_is():
    text = LOOP.replace(
        "    xm.mark_step()\n", "    print(loss.item())\n    xm.mark_step()\n"
    ).replace("    READ\n", "")
    assert [f.code for f in findings(text, "XLA401")] == ["XLA401"]


def test_an_op_on_the_synced_value_makes_a_graph_of_its_own():
    text = LOOP.replace("READ", "print(loss.mean().item())")
    assert [f.code for f in findings(text, "XLA401")] == ["XLA401"]
