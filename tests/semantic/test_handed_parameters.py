"""A parameter every call of its function in this script hands a host value (held-out 157's
GPT-2 distillation, nanoGPT's idiom: ``best_val_loss = 1e9`` handed to ``train_distill(...,
best_val_loss, ...)``, which rebinds it to ``estimate_loss()["val"]``, a CPU tensor of
``.item()`` values): ``if losses["val"] < best_val_loss:`` reads no device tensor."""

from tests.helpers import findings, src

LOOP = src("""
import torch


def estimate_loss(model, data, eval_iters):
    out = {}
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            losses[k] = model(data[split].to("cuda")).pow(2).mean().item()
        out[split] = losses.mean()
    return out


def train(model, data, opt, best_val_loss):
    for it in range(100):
        if it % 10 == 0:
            losses = estimate_loss(model, data, 5)
            if losses["val"] < best_val_loss:
                best_val_loss = losses["val"]
        loss = model(data["train"].to("cuda")).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


best = 1e9
train(None, {}, None, best)
""")


def test_a_parameter_handed_only_host_values_is_no_device_tensor():
    assert not findings(LOOP, "XLA404")


def test_a_device_tensor_handed_in_still_counts():
    code = LOOP.replace("best = 1e9", 'best = torch.tensor(1e9, device="cuda")')
    assert findings(code, "XLA404")


def test_a_function_nobody_here_calls_keeps_its_doubt():
    code = LOOP.replace("train(None, {}, None, best)\n", "")
    assert findings(code, "XLA404")
