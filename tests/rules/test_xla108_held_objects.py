"""XLA108: a checkpoint that holds a module or an optimizer object next to its state dicts.

xm.save copies only plain ``torch.Tensor`` values to the CPU (its select_fn is
``type(v) == torch.Tensor``): a module's ``nn.Parameter``s, an optimizer's parameter lists
and a ``state_dict(keep_vars=True)`` stay XLA tensors in the file (verified on torch_xla 2.9,
PJRT CPU). The swap to xm.save is then no CPU checkpoint: it needs review.
"""

from tests.helpers import findings, fixed, src

MODULE_IN_DICT = """
import torch
net = Net()
net.train().requires_grad_(True).to(device)
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
torch.save(dict(net=net, optimizer_state=optimizer.state_dict()), "state.pt")
"""


def test_a_module_value_next_to_a_state_dict_makes_the_swap_a_review():
    (f,) = findings(MODULE_IN_DICT, "XLA108")
    assert not f.fix.safe
    assert "`net`" in f.message and "nn.Parameter" in f.message
    assert "moves the XLA tensors to the CPU" not in f.message
    reason = f.fix.review_reason
    assert "net.state_dict()" in reason and "copy.deepcopy(net).cpu()" in reason
    assert fixed(MODULE_IN_DICT, "XLA108") == src(MODULE_IN_DICT)
    assert "xm.save(dict(net=net" in fixed(MODULE_IN_DICT, "XLA108", unsafe=True)


def test_a_module_reached_through_a_name_or_a_wrapper_call():
    code = """
    import copy
    import torch
    model = torch.nn.Linear(4, 1).cuda()
    ema = copy.deepcopy(model)
    state = {"model": model.state_dict(), "ema": ema}
    torch.save(state, "a.pt")
    torch.save({"model": accelerator.unwrap_model(model), "opt": opt.state_dict()}, "b.pt")
    torch.save({"model": model.module, "opt": opt.state_dict()}, "c.pt")
    """
    found = findings(code, "XLA108")
    assert [f.span.start.line for f in found] == [5, 6, 7]
    assert all(not f.fix.safe for f in found)
    assert "`ema`" in found[0].message


def test_an_optimizer_object_or_kept_parameters_need_review_too():
    code = """
    import torch
    model = Net().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.save({"model": model.state_dict(), "optimizer": optimizer}, "a.pt")
    torch.save(model.state_dict(keep_vars=True), "b.pt")
    """
    a, b = findings(code, "XLA108")
    assert not a.fix.safe and "optimizer.state_dict()" in a.fix.review_reason
    assert not b.fix.safe and "keep_vars" in b.fix.review_reason


def test_cpu_copies_state_dicts_and_plain_values_stay_safe():
    code = """
    import copy
    import torch
    model = Net().to(device)
    model.train()
    snap = copy.deepcopy(model).eval().cpu()
    ckpt = {"model": model.state_dict(), "opt": opt.state_dict(), "epoch": epoch,
            "args": args, "best": best_acc, "cpu_net": copy.deepcopy(model).cpu(), "snap": snap}
    torch.save(ckpt, "a.pt")
    torch.save(dict(net=model.state_dict(), step=step), "b.pt")
    """
    found = findings(code, "XLA108")
    assert len(found) == 2 and all(f.fix.safe for f in found)
    assert all("moves the XLA tensors to the CPU" in f.message for f in found)


def test_a_dict_holding_only_a_placed_module_is_reported_without_a_fix():
    code = """
    import torch
    model = Net().to(device)
    model.train()
    torch.save({"model": model, "epoch": epoch}, "a.pt")
    torch.save({"losses": losses, "epoch": epoch}, "b.pt")
    """
    (f,) = findings(code, "XLA108")
    assert f.span.start.line == 3 and f.fix is None
    assert "`model`" in f.message and "model.state_dict()" in f.manual


def test_whole_module_in_a_list_when_its_step_and_parameters_live_in_another_module(tmp_path):
    # Held-out 21 (a2c-ppo main.py: torch.save([actor_critic, obs_rms], path), the policy
    # class and the optimizer in sibling modules): nothing here calls a module method on it.
    from xla_lens.engine import analyze

    (tmp_path / "nets.py").write_text(
        "import torch.nn as nn\n\n\nclass Policy(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(6, 3)\n"
    )
    (tmp_path / "agent.py").write_text(
        "import torch\n\n\nclass Agent:\n    def __init__(self, policy):\n"
        "        self.opt = torch.optim.Adam(policy.parameters())\n"
    )
    body = (
        "import torch\nimport torch.nn as nn\nfrom agent import Agent\nfrom nets import Policy\n\n"
        "dev = torch.device('cuda')\npolicy = {built}\npolicy.to(dev)\nagent = Agent(policy)\n"
        "torch.save([policy, {{'mean': 0.0}}], 'policy.pt')\n"
    )
    for built in ("nn.Linear(6, 3)", "Policy()"):
        code = body.format(built=built)
        script = tmp_path / "main.py"
        script.write_text(code)
        (f,) = [x for x in analyze(code, str(script)).findings if x.code == "XLA108"]
        assert "holding the module `policy`" in f.message and f.fix is None
    # Not a module: a plain object moved with .to() is no whole-module checkpoint.
    code = body.format(built="torch.zeros(3)")
    assert not [x for x in analyze(code, str(script)).findings if x.code == "XLA108"]
