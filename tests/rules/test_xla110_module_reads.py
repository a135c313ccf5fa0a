"""XLA110's unwrap also turns the wrapper's ``model.module`` reads into ``model`` (held-out 50,
FastSpeech2: ``model = nn.DataParallel(model)`` then ``torch.save({"model":
model.module.state_dict()}, path)``): removing the wrapper alone left ``model.module`` to raise
AttributeError at the first checkpoint. The saved state dict keeps its keys (the inner model's,
no ``module.`` prefix), so that checkpoint is no review reason."""

from tests.helpers import findings, fixed, src


def _wrap_finding(code):
    (f,) = [f for f in findings(code, "XLA110") if f.message.startswith("nn.DataParallel")]
    return f


SAVES_INNER = src("""
import torch
import torch.nn as nn


def train(path):
    model = nn.Linear(4, 2)
    model = nn.DataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(8, 4)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save({"model": model.module.state_dict(), "step": 3}, path)
""")


def test_the_unwrap_rewrites_the_module_reads_and_keeps_the_checkpoint():
    out = fixed(SAVES_INNER, "XLA110", unsafe=True)
    assert "nn.DataParallel" not in out
    assert '{"model": model.state_dict(), "step": 3}' in out
    assert ".module" not in out


def test_a_checkpoint_of_the_inner_state_dict_is_no_review_reason():
    f = _wrap_finding(SAVES_INNER)
    assert f.fix is not None
    reason = f.fix.review_reason
    assert "module. prefix" not in reason and "`.module`" not in reason


def test_a_module_read_in_another_function_keeps_the_review_and_is_not_rewritten():
    code = SAVES_INNER.replace(
        '    torch.save({"model": model.module.state_dict(), "step": 3}, path)\n',
        "    return model\n\n\ndef save(model, path):\n"
        '    torch.save({"model": model.module.state_dict()}, path)\n',
    )
    f = _wrap_finding(code)
    assert f.fix is None and "reads `.module`" in f.manual
    assert "model.module.state_dict()" in fixed(code, "XLA110", unsafe=True)


def test_saving_the_wrapper_itself_stays_a_review_reason():
    code = SAVES_INNER.replace(
        '{"model": model.module.state_dict(), "step": 3}', '{"model": model.state_dict()}'
    )
    f = _wrap_finding(code)
    assert f.fix is not None and not f.fix.safe
    assert "module." in f.fix.review_reason


def test_a_wrapper_bound_to_another_name_reads_back_as_that_name():
    code = SAVES_INNER.replace("model = nn.DataParallel(model)", "net = nn.DataParallel(model)")
    code = code.replace("model(torch.randn", "net(torch.randn").replace(
        "model.module.state_dict()", "net.module.state_dict()"
    )
    out = fixed(code, "XLA110", unsafe=True)
    assert "net = model\n" in out and '{"model": net.state_dict(), "step": 3}' in out


def test_a_wrapper_moved_as_it_is_built_reads_back_as_the_model():
    # Held-out 53 (HRNet): ``model = nn.DataParallel(model, device_ids=gpus).cuda()``.
    code = SAVES_INNER.replace(
        "model = nn.DataParallel(model)", "model = nn.DataParallel(model, device_ids=[0]).cuda()"
    )
    out = fixed(code, "XLA110", unsafe=True)
    assert "model = model.cuda()\n" in out
    assert '{"model": model.state_dict(), "step": 3}' in out


def test_a_wrap_in_one_branch_leaves_the_reads_the_other_branch_wraps_too():
    # Held-out 83 (HigherHRNet's dist_train.py): DDP when distributed, DataParallel otherwise;
    # the `.module` reads after the `if` read the DDP as well. Rewriting them to `model`
    # (with DDP kept over the xla backend) saved `module.`-prefixed keys that the repo's
    # strict load then refused.
    code = SAVES_INNER.replace(
        "    model = nn.DataParallel(model)\n",
        "    if distributed:\n"
        "        model = nn.parallel.DistributedDataParallel(model)\n"
        "    else:\n"
        "        model = nn.DataParallel(model)\n",
    ).replace("def train(path):", "def train(path, distributed):")
    f = _wrap_finding(code)
    assert f.fix is None and "reads `.module`" in f.manual
    assert "model.module.state_dict()" in fixed(code, "XLA110", unsafe=True)
