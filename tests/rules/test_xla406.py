from tests.helpers import findings, fixed, src

CODE = """
import torch


def generate(model, idx, max_new_tokens, context_size):
    for _ in range(max_new_tokens):
        idx_cond = idx[:, -context_size:]  # crop to the supported context
        logits = model(idx_cond)[:, -1, :]
        idx = torch.cat((idx, logits.argmax(-1, keepdim=True)), dim=1)
    return idx


def sample_frames(model, video, n, steps):
    for _ in range(steps):
        video = torch.concat([video, model(video[..., -n:])], dim=-1)
    return video
"""


def test_unguarded_negative_starts_are_clamped_and_comments_survive():
    found = findings(CODE, "XLA406")
    assert [(f.span.start.line, model_text(f)) for f in found] == [
        (5, "-context_size"),
        (13, "-n"),
    ]
    assert all(f.fix is not None and f.fix.safe for f in found)
    assert "Value out of range" in found[0].message
    assert fixed(CODE, "XLA406") == src(
        """
        import torch


        def generate(model, idx, max_new_tokens, context_size):
            for _ in range(max_new_tokens):
                idx_cond = idx[:, -min(context_size, idx.shape[1]):]  # crop to the supported context
                logits = model(idx_cond)[:, -1, :]
                idx = torch.cat((idx, logits.argmax(-1, keepdim=True)), dim=1)
            return idx


        def sample_frames(model, video, n, steps):
            for _ in range(steps):
                video = torch.concat([video, model(video[..., -min(n, video.shape[-1]):])], dim=-1)
            return video
        """
    )


def model_text(finding):
    line = src(CODE).splitlines()[finding.span.start.line]
    return line[finding.span.start.col : finding.span.end.col]


def test_guarded_constant_and_one_dimensional_slices_are_left_alone():
    code = """
    idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
    if x.shape[1] > n:
        x = x[:, -n:]
    a = x[:, -4:]
    b = history[-window:]
    c = x[:, -min(n, x.shape[1]):]
    d = x[:, -n:-1]
    x[:, -n:] = 0
    for batch_x, batch_y in loader:
        outputs = model(batch_x)[:, -pred_len:, :]
        batch_y = batch_y[:, -pred_len:, :]
    for step in range(steps):
        window = window[:, -n:]
        window = window + 1
    """
    assert findings(code, "XLA406") == []
