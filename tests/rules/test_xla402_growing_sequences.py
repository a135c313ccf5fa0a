"""XLA402 on sequences grown one token at a time (held-out 20, karpathy's ng-video-lecture
`generate`): `idx = torch.cat((idx, idx_next), dim=1)` fed back to the model. Measured on PJRT
CPU (12 tokens): a sync per token gave 13 compiles, one per length; no sync traced all 12
iterations into one graph run at the final `.tolist()`."""

from tests.helpers import findings, fixed, src

GENERATE = """
import torch
import torch.nn as nn

device = "cuda"


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.head = nn.Linear(8, 10)

    def forward(self, idx):
        return self.head(self.emb(idx))

    def generate(self, idx, n, block):
        for _ in range(n):
            idx_cond = idx[:, -min(block, idx.shape[1]):]
            logits = self(idx_cond)[:, -1, :]
            idx_next = torch.multinomial(torch.softmax(logits, -1), 1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


model = LM().to(device)
print(model.generate(torch.zeros((1, 1), dtype=torch.long, device=device), 20, 4)[0].tolist())
"""


def _grown(code: str):
    return [f for f in findings(code, "XLA402") if "grows by" in f.message]


def test_a_token_by_token_sampling_loop_is_reported_without_a_fix():
    (f,) = _grown(GENERATE)
    assert "torch.cat((idx, idx_next)" in src(GENERATE).splitlines()[f.span.start.line]
    assert "`self(...)`" in f.message and "no sync in the loop" in f.message
    assert f.fix is None and "fixed" in f.manual
    assert fixed(GENERATE, "XLA402") == src(GENERATE)


def test_a_synced_loop_is_one_compile_per_length():
    code = GENERATE.replace(
        "            idx = torch.cat((idx, idx_next), dim=1)\n",
        "            idx = torch.cat((idx, idx_next), dim=1)\n            torch_xla.sync()\n",
    ).replace("import torch\n", "import torch\nimport torch_xla\n", 1)
    (f,) = _grown(code)
    assert "one per length" in f.message


def test_collecting_predictions_feeds_nothing_back():
    code = """
    import torch

    def predict(model, loader):
        preds = torch.zeros(0, dtype=torch.long, device="cuda")
        with torch.no_grad():
            for x, _ in loader:
                out = model(x.cuda())
                preds = torch.cat((preds, out.argmax(1)))
        return preds
    """
    assert _grown(code) == []


def test_a_cpu_script_is_not_told_about_graphs():
    code = (
        GENERATE.replace('device = "cuda"', 'device = "cpu"')
        .replace("model = LM().to(device)", "model = LM()")
        .replace(", device=device)", ")")
    )
    assert _grown(code) == []


PER_FRAME_STEP = """
import torch
import torch.nn as nn

device = "cuda"


class Memory(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)

    def forward(self, frame, values):
        return self.enc(frame) + values.mean(0)


def train_step(model, optimizer, frames, num_frames):
    values = model.enc(frames[0]).unsqueeze(0)
    for t in range(1, num_frames):
        out = model(frames[t], values)
        values = torch.cat([values, out.unsqueeze(0)], 0)
    loss = values.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


model = Memory().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in torch.randn(8, 3, 2, 4, device=device):
    train_step(model, optimizer, batch, 3)
"""


def test_a_per_frame_loop_inside_one_training_step_is_not_reported():
    # XMem's do_pass (held-out 47): the frames of one step, a fixed count: every step traces
    # the same lengths into its one graph, compiled once.
    assert _grown(PER_FRAME_STEP) == []
    # The same loop with a sync per frame is a graph per length again: still reported.
    synced = PER_FRAME_STEP.replace(
        "        values = torch.cat([values, out.unsqueeze(0)], 0)\n",
        "        values = torch.cat([values, out.unsqueeze(0)], 0)\n        torch_xla.sync()\n",
    ).replace("import torch\n", "import torch\nimport torch_xla\n", 1)
    assert len(_grown(synced)) == 1


def test_a_generation_loop_run_inside_training_is_still_reported():
    # build-nanogpt samples every 250 steps inside its training loop: no gradients, drawn
    # tokens; the advice (a fixed window, a static cache) holds there.
    sampling = PER_FRAME_STEP.replace(
        "    for t in range(1, num_frames):\n",
        "    with torch.no_grad():\n        _ = 0\n    for t in range(1, num_frames):\n",
    ).replace(
        "        out = model(frames[t], values)\n",
        "        out = model(frames[t], values)\n        out = torch.multinomial(out.softmax(-1), 4, True).float()\n",
    )
    assert len(_grown(sampling)) == 1


def test_a_decode_loop_on_a_cpu_copy_of_the_model_is_off_xla():
    # Held-out 71's Trainium tutorial decodes its demo on `cpu_model = model.to("cpu")` with a
    # CPU prompt: nothing there is traced, so no shape and no sync matter.
    code = (
        GENERATE
        + """

def demo(model, prompt):
    cpu_model = model.to("cpu")
    cpu_model.eval()
    idx = torch.tensor([prompt], dtype=torch.long)
    with torch.no_grad():
        for _ in range(8):
            logits = cpu_model(idx[:, -4:])
            idx = torch.cat([idx, logits[:, -1, :].argmax(-1, keepdim=True)], dim=1)
    return idx
"""
    )
    grown = _grown(code)
    assert len(grown) == 1 and "`self(...)`" in grown[0].message  # generate() only
    on_device = code.replace('cpu_model = model.to("cpu")', "cpu_model = model.to(device)")
    assert len(_grown(on_device)) == 2


def test_a_name_the_loop_rebinds_each_iteration_does_not_grow_across_it():
    # Held-out 84 (text2img-DiT's tpu_train.py): `for x, y in loader` rebinds `y` every step;
    # the sampling block's `y = torch.cat([y, y_null], 0)` runs once and is never fed back.
    code = """
    import torch
    import torch.nn as nn

    device = "cuda"
    model = nn.Embedding(10, 4).to(device)
    loader = [(torch.zeros(2, dtype=torch.long), torch.ones(2, dtype=torch.long))] * 3
    for epoch in range(2):
        for x, y in loader:
            emb = model(y.to(device))
            if epoch == 1:
                y = torch.cat([y, torch.zeros_like(y)], 0)
                print(model(y.to(device)).sum())
    """
    assert _grown(code) == []
    # A reset before the growth: the inner loop grows, the outer one does not carry it.
    reset = GENERATE.replace(
        "        for _ in range(n):\n",
        "        start = idx\n        for _ in range(n):\n",
    )
    assert len(_grown(reset)) == 1
