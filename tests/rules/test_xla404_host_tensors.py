"""XLA404: a CPU tensor filled with Python numbers (``torch.zeros(n)`` then ``t[k] = x.item()``)
lives on the host, so testing it, or a value derived from it, is no device sync. A tensor made
on the device, or one fed a device tensor, still is."""

from tests.helpers import findings, src

EVAL_THEN_COMPARE = """
import torch

best_score_loss = 1e9
if resume:
    ckpt = torch.load(path, map_location=device)
    best_score_loss = ckpt["best_score_loss"]


@torch.no_grad()
def measure(n):
    scores = {{}}
    net.eval()
    for part in ("fit", "held"):
        vals = torch.zeros(n{device})
        for j in range(n):
            xb, yb = sample(part)
            _, batch_loss = net(xb, yb)
            vals[j] = {stored}
        scores[part] = vals.mean()
    net.train()
    return scores


step = 0
while True:
    if step % 100 == 0:
        scores = measure(20)
        if scores["held"] < best_score_loss:
            best_score_loss = scores["held"]
    xb, yb = sample("fit")
    _, loss = net(xb, yb)
    loss.backward()
    opt.step()
    opt.zero_grad()
    step += 1
"""


def _lines(code: str, rule: str) -> list[str]:
    text = src(code).splitlines()
    return [text[f.span.start.line].strip() for f in findings(code, rule)]


def test_a_cpu_tensor_filled_with_item_values_is_a_host_value():
    code = EVAL_THEN_COMPARE.format(device="", stored="batch_loss.item()")
    assert _lines(code, "XLA404") == []


def test_an_explicit_cpu_device_is_still_the_host():
    code = EVAL_THEN_COMPARE.format(device=", device='cpu'", stored="batch_loss.item()")
    assert _lines(code, "XLA404") == []


def test_a_tensor_made_on_the_device_still_syncs_when_tested():
    code = EVAL_THEN_COMPARE.format(device=", device=device", stored="batch_loss.item()")
    assert _lines(code, "XLA404") == ['if scores["held"] < best_score_loss:']


def test_a_cpu_tensor_fed_a_device_tensor_is_not_provably_host():
    code = EVAL_THEN_COMPARE.format(device="", stored="batch_loss")
    assert _lines(code, "XLA404") == ['if scores["held"] < best_score_loss:']


def test_a_default_device_set_by_the_script_moves_bare_constructors():
    code = "import torch\ntorch.set_default_device('cuda')\n" + src(
        EVAL_THEN_COMPARE.format(device="", stored="batch_loss.item()")
    ).replace("import torch\n", "", 1)
    assert _lines(code, "XLA404") == ['if scores["held"] < best_score_loss:']


def test_comparing_the_live_loss_is_still_reported():
    code = EVAL_THEN_COMPARE.format(device="", stored="batch_loss.item()").replace(
        "    step += 1\n", "    if loss < best_score_loss:\n        pass\n    step += 1\n"
    )
    assert _lines(code, "XLA404") == ["if loss < best_score_loss:"]


def test_python_int_counters_on_self_stay_quiet():
    code = """
    class Runner:
        def fit(self, cfg):
            self.n_steps = 0
            it = iter(self.loader)
            while True:
                xb, yb = next(it)
                _, self.loss = self.net(xb, yb)
                self.loss.backward()
                self.opt.step()
                self.n_steps += 1
                if cfg.limit is not None and self.n_steps >= cfg.limit:
                    break
    """
    assert findings(code, "XLA404") == []


def test_bare_constructors_under_a_device_context_are_on_that_device():
    code = EVAL_THEN_COMPARE.format(device="", stored="batch_loss.item()").replace(
        "        vals = torch.zeros(n)\n",
        "        with torch.device(device):\n            vals = torch.zeros(n)\n",
    )
    assert _lines(code, "XLA404") == ['if scores["held"] < best_score_loss:']


def test_a_host_tensor_moved_to_the_device_is_a_device_tensor():
    code = EVAL_THEN_COMPARE.format(device="", stored="batch_loss.item()").replace(
        "scores[part] = vals.mean()", "scores[part] = vals.mean().to(device)"
    )
    assert _lines(code, "XLA404") == ['if scores["held"] < best_score_loss:']


def test_a_while_test_sees_the_bindings_of_its_own_body():
    # The float before the loop reaches the first test only; the body's tensor every later one.
    code = """
    loss = 1.0
    while loss > 0.1:
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
    """
    assert _lines(code, "XLA404") == ["while loss > 0.1:"]


def test_availability_queries_are_python_bools_not_tensor_tests():
    # minGPT-ddp's trainer (held-out 170): the condition picks a device, it reads no tensor.
    code = """
    import torch

    def train(model, opt, loader, local_rank):
        for source, targets in loader:
            source = source.to(local_rank if torch.accelerator.is_available() else "cpu")
            targets = targets.to(local_rank if torch.cuda.is_available() else "cpu")
            loss = torch.nn.functional.cross_entropy(model(source), targets)
            opt.zero_grad()
            loss.backward()
            opt.step()
    """
    assert findings(code, "XLA404") == []
