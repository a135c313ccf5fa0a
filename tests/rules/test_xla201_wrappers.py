"""XLA201 when the model goes through a helper: DDP already averages the gradients during
backward, so an inserted ``xm.reduce_gradients`` would all-reduce them a second time every
micro-step (numerically the same, but wrong work). A helper seen to wrap in DDP silences the
rule like a direct ``DDP(...)``; one that cannot be seen makes the fix a review."""

from pathlib import Path

from xla_lens.engine import analyze

from tests.helpers import findings, fixed, src

SCRIPT = """
import torch
import torch.distributed as dist
{imports}


def train(local_rank, loader):
    dist.init_process_group("xla")
    {wrap}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler()
    for x in loader:
        with torch.autocast("cuda"):
            loss = model(x).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
"""


def script(imports: str, wrap: str) -> str:
    return SCRIPT.format(imports=imports, wrap=wrap)


def test_unseen_helper_named_like_ddp_makes_the_fix_a_review():
    code = script("from mylib import smart_DDP", "model = smart_DDP(Net().cuda(local_rank))")
    (f,) = findings(code, "XLA201")
    assert not f.fix.safe
    reason = f.fix.review_reason
    assert "smart_DDP()" in reason and "line 8" in reason and "second time" in reason
    assert "smart_DDP()" in f.message
    assert "reduce_gradients" not in fixed(code, "XLA201")  # `fix` leaves it alone
    assert "xm.reduce_gradients(opt)" in fixed(code, "XLA201", unsafe=True)


def test_unseen_wrapper_returning_the_model_makes_the_fix_a_review():
    code = script("from mylib import load_weights", "model = load_weights(Net(), 'w.pt')")
    assert findings(code, "XLA201")[0].fix.safe  # a factory, not a wrapper of the model
    code = script(
        "from mylib import load_weights", "model = Net()\n    model = load_weights(model, 'w.pt')"
    )
    (f,) = findings(code, "XLA201")
    assert not f.fix.safe and "load_weights()" in f.fix.review_reason


def test_local_helper_or_class_that_wraps_in_ddp_is_like_a_direct_ddp():
    helper = """
    from torch.nn.parallel import DistributedDataParallel as DDP


    def wrap(model, rank):
        return DDP(model, device_ids=[rank])
    """
    code = script(src(helper), "model = wrap(Net(), local_rank)\n    model = wrap(model, 0)")
    assert findings(code, "XLA201") == []
    cls = """
    from torch.nn.parallel import DistributedDataParallel


    class Wrapped(DistributedDataParallel):
        pass
    """
    code = script(src(cls), "model = Net()\n    model = Wrapped(model)")
    assert findings(code, "XLA201") == []


def test_seen_non_reducing_calls_and_factories_keep_the_safe_fix():
    for imports, wrap in [
        ("", "model = Net()\n    model = torch.compile(model)"),
        ("from models import Model", "model = Model('cfg.yaml').cuda(local_rank)"),
        ("", "model = Net()\n    model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)"),
    ]:
        (f,) = findings(script(imports, wrap), "XLA201")
        assert f.fix.safe, wrap


def _workspace(tmp_path: Path, helper: str) -> list:
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("")
    (tmp_path / "utils" / "torch_utils.py").write_text(src(helper))
    main = tmp_path / "train.py"
    main.write_text(
        src(
            script(
                "from utils.torch_utils import smart_DDP",
                "model = Net()\n    model = smart_DDP(model)",
            )
        )
    )
    result = analyze(main.read_text(), str(main), target="modern")
    assert result.ok and not result.rule_errors
    return [f for f in result.findings if f.code == "XLA201"]


def test_workspace_helper_seen_to_wrap_in_ddp_silences_the_rule(tmp_path: Path):
    helper = """
    from torch.nn.parallel import DistributedDataParallel as DDP


    def _ddp_kwargs():
        return {"static_graph": True}


    def smart_DDP(model):
        return DDP(model, device_ids=[0], **_ddp_kwargs())
    """
    assert _workspace(tmp_path, helper) == []


def test_workspace_helper_seen_not_to_wrap_keeps_the_safe_fix(tmp_path: Path):
    helper = """
    def smart_DDP(model):
        return model
    """
    (f,) = _workspace(tmp_path, helper)
    assert f.fix.safe
