"""XLA101 on a function parameter that defaults to a CUDA device (efficientdet's
``create_loader(..., device="cuda")`` and ``PrefetchLoader(device="cuda")``, YOLOX's
``pyobj2tensor(obj, device="cuda")``, held-out 31/32): callers that leave it out place on
CUDA. The default becomes the string "xla": a default is evaluated when the ``def`` runs (at
import), where a runtime call would start the XLA runtime."""

from tests.helpers import findings, fixed

LOADER = """
import torch


def to_device(batch, device="cuda"):
    return [t.to(device=device) for t in batch]
"""


def test_a_cuda_default_used_only_to_place_becomes_xla() -> None:
    (f,) = findings(LOADER, "XLA101")
    assert f.span.start.line == 3 and "`device` defaults to CUDA" in f.message
    assert f.fix is not None and f.fix.safe
    assert 'def to_device(batch, device="xla"):' in fixed(LOADER, "XLA101")


def test_a_default_compared_as_a_string_needs_review() -> None:
    code = """
    import torch


    class Prefetch:
        def __init__(self, loader, *, device="cuda"):
            self.loader = loader
            self.device = device

        def __iter__(self):
            for x in self.loader:
                if self.device == "cuda":
                    yield x.cuda(non_blocking=True)
                else:
                    yield x.to(self.device)
    """
    (f,) = [f for f in findings(code, "XLA101") if "defaults to CUDA" in f.message]
    assert f.fix is not None and not f.fix.safe
    assert "compared as a string" in f.message


def test_a_default_of_a_parameter_not_named_for_a_device_is_left_alone() -> None:
    code = """
    def describe(kind="cuda"):
        return f"runs on {kind}"
    """
    assert findings(code, "XLA101") == []


def test_a_helper_default_the_caller_overrides_is_no_evidence_at_that_call(tmp_path) -> None:
    # nanochat's loader (dev corpus): `def loader(..., device="cuda")` called with
    # device=device says nothing about that call; a call that leaves it out still does.
    from xla_lens.engine import analyze

    (tmp_path / "data.py").write_text(
        "import torch\n\n\ndef batches(n, device='cuda'):\n"
        "    for _ in range(n):\n        yield torch.randn(4, 3).to(device)\n"
    )
    script = tmp_path / "train.py"
    for call, reported in (("batches(10, device=dev)", False), ("batches(10)", True)):
        text = (
            "import torch\nfrom data import batches\n\ndev = 'cpu'\n"
            "model = torch.nn.Linear(3, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            f"for x in {call}:\n    model(x).sum().backward()\n    opt.step()\n"
        )
        script.write_text(text)
        found = [f for f in analyze(text, str(script)).findings if f.code == "XLA118"]
        assert bool(found) is reported, call
