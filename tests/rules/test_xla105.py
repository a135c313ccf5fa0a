from xla_lens.engine.fixing import apply_fix
from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

LOOP = """
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
for epoch in range(3):
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    scheduler.step()
"""


def test_optimizer_step_in_the_loop_becomes_xm_optimizer_step_in_both_targets():
    (f,) = findings(LOOP, "XLA105")
    assert f.span.start.line == 8
    expected = src(
        """
        import torch
        import torch_xla.core.xla_model as xm

        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
        for epoch in range(3):
            for x, y in loader:
                optimizer.zero_grad()
                loss_fn(model(x), y).backward()
                xm.optimizer_step(optimizer)
            scheduler.step()
        """
    )
    assert fixed(LOOP, "XLA105") == expected
    assert fixed(LOOP, "XLA105", target="legacy") == expected


def test_step_function_and_existing_xm_alias():
    code = """
    import torch_xla.core.xla_model as X

    opt = build_optimizer(model)

    def step(batch):
        model(batch).backward()
        opt.step()

    for batch in loader:
        step(batch)
    """
    (f,) = findings(code, "XLA105")
    assert f.span.start.line == 6
    assert fixed(code, "XLA105") == src(code).replace("opt.step()", "X.optimizer_step(opt)")


def test_optimizer_step_inside_the_loop_body_via_self():
    code = """
    import torch
    class T:
        def fit(self):
            for batch in self.loader:
                self.model(batch).backward()
                self.optimizer.step()
    """
    assert "xm.optimizer_step(self.optimizer)" in fixed(code, "XLA105")


def test_scripts_that_reduce_gradients_or_use_a_scaler_report_nothing():
    reduced = """
    import torch_xla.core.xla_model as xm
    for x in loader:
        model(x).backward()
        xm.reduce_gradients(optimizer)
        optimizer.step()
    """
    all_reduced = """
    import torch_xla.core.xla_model as xm
    for x in loader:
        model(x).backward()
        xm.all_reduce("sum", xm._fetch_gradients(optimizer))
        optimizer.step()
    """
    ddp = """
    import torch
    model = torch.nn.parallel.DistributedDataParallel(model)
    for x in loader:
        model(x).backward()
        optimizer.step()
    """
    scaler = """
    import torch
    scaler = torch.cuda.amp.GradScaler()
    for x in loader:
        scaler.scale(model(x)).backward()
        scaler.step(optimizer)
        scaler.update()
    """
    for code in (reduced, all_reduced, ddp, scaler):
        assert findings(code, "XLA105") == []


def test_frameworks_fsdp_spmd_and_compiled_steps_keep_their_plain_step():
    loop = """
    for x in loader:
        model(x).backward()
        optimizer.step()
    """
    heads = [
        "from accelerate import Accelerator\nmodel, optimizer = Accelerator().prepare(model, optimizer)\n",
        "import lightning as L\n",
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nmodel = FSDP(model)\n",
        "import torch_xla.runtime as xr\nxr.use_spmd()\n",
    ]
    for head in heads:
        assert findings(head + src(loop), "XLA105") == [], head
    compiled = """
    import torch_xla

    @torch_xla.compile(full_graph=True)
    def train_step(x):
        model(x).backward()
        optimizer.step()

    for x in loader:
        train_step(x)
    """
    assert findings(compiled, "XLA105") == []
    # Without any of them the same loop is reported.
    assert len(findings("import torch\n" + src(loop), "XLA105")) == 1


def test_converted_steps_outside_loops_schedulers_and_closures_report_nothing():
    code = """
    import torch
    import torch_xla.core.xla_model as xm
    optimizer = torch.optim.LBFGS(model.parameters())
    optimizer.step()
    for x in loader:
        model(x).backward()
        xm.optimizer_step(optimizer)
        scheduler.step()
        optimizer.step(closure)
    """
    for target in ("modern", "legacy"):
        assert findings(code, "XLA105", target) == []


def test_hover_explains_the_all_reduce_and_no_sync():
    rule = get_rule("XLA105")
    assert rule is not None
    text = rule.hover[".step"]
    assert "xm.optimizer_step(optimizer)" in text and "barrier=False" in text
    assert "legacy" in text and "modern" in text


def test_a_local_optimizer_wrapper_gets_no_rewrite_at_its_call():
    code = """
    import torch

    class NoamOpt:
        def __init__(self, optimizer):
            self.optimizer = optimizer

        def step(self):
            self.optimizer.step()

    optimizer = NoamOpt(torch.optim.Adam(model.parameters()))
    for x in loader:
        model(x).backward()
        optimizer.step()
    """
    (f,) = findings(code, "XLA105")
    assert f.fix is None and "NoamOpt" in f.message and "inside `NoamOpt`" in f.manual


def test_a_workspace_optimizer_wrapper_handed_through_a_closure_gets_no_rewrite(tmp_path):
    """pytorch-original-transformer (held-out 98): ``CustomLRAdamOptimizer`` of utils/ wraps
    Adam with no param_groups of its own and reaches the loop through the parameter of the
    function that builds the closure; xm.optimizer_step of it raised on two replicas. A
    wrapper that gives ``self.param_groups`` is a torch-like optimizer: safe."""
    from xla_lens.engine import analyze
    from xla_lens.semantic import workspace, workspace_calls

    (tmp_path / "utils").mkdir()
    wrapper = (
        "class CustomLR:\n"
        "    def __init__(self, optimizer):\n"
        "        self.optimizer = optimizer\n"
        "    def step(self):\n"
        "        for g in self.optimizer.param_groups:\n"
        "            g['lr'] = 0.1\n"
        "        self.optimizer.step()\n"
    )
    (tmp_path / "utils" / "optim.py").write_text(wrapper)
    script = tmp_path / "train.py"
    script.write_text(
        src(
            """
            import torch
            from utils.optim import CustomLR

            def get_loop(model, custom_optimizer):
                def loop(loader):
                    for x in loader:
                        model(x).sum().backward()
                        custom_optimizer.step()
                return loop

            def main(model, loader):
                opt = CustomLR(torch.optim.Adam(model.parameters()))
                get_loop(model, opt)(loader)
            """
        )
    )

    def step_finding():
        workspace.clear_cache()
        workspace_calls.clear_cache()
        result = analyze(script.read_text(), str(script))
        (f,) = [f for f in result.findings if f.code == "XLA105"]
        return f

    f = step_finding()
    # No rewrite is offered: xm.optimizer_step(wrapper) raises on several replicas, and
    # stepping the inner optimizer skips the wrapper's own work (held-out 159).
    assert f.fix is None and "`CustomLR` (a class of the project" in f.message
    assert "inside `CustomLR`" in f.manual
    (tmp_path / "utils" / "optim.py").write_text(
        wrapper.replace(
            "        self.optimizer = optimizer\n",
            "        self.optimizer = optimizer\n        self.param_groups = optimizer.param_groups\n",
        )
    )
    assert step_finding().fix.safe


ZERO = """
import torch
import torch_xla
import torch_xla.distributed.parallel_loader as pl
from torch_xla.distributed.zero_redundancy_optimizer import ZeroRedundancyOptimizer


def run_epoch(model, opt, device_loader):
    for x, y in device_loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()


def train(index):
    device = torch_xla.device()
    opt = ZeroRedundancyOptimizer(model.parameters(), torch.optim.SGD, lr=0.1)
    head_opt = torch.optim.SGD(head.parameters(), lr=0.1)

    def loop(device_loader):
        for x, y in device_loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
            head_opt.step()

    loop(pl.MpDeviceLoader(loader, device))
    run_epoch(model, opt, pl.MpDeviceLoader(loader, device))


torch_xla.launch(train)
"""


def test_zero1_optimizer_steps_stay_plain_a_plain_optimizer_beside_it_is_still_reported():
    # ZeRO-1's step() reduce-scatters the gradients itself: xm.optimizer_step would
    # all-reduce every gradient first, doubling the traffic ZeRO-1 exists to avoid. Followed
    # through a closure and through a parameter every caller passes the ZeRO optimizer.
    (f,) = findings(ZERO, "XLA105")
    assert src(ZERO).splitlines()[f.span.start.line].strip() == "head_opt.step()"


def test_zero1_optimizer_handed_in_from_elsewhere_stays_plain():
    code = """
    import torch_xla
    from torch_xla.distributed.zero_redundancy_optimizer import ZeroRedundancyOptimizer

    def build(model):
        return ZeroRedundancyOptimizer(model.parameters(), torch.optim.SGD, lr=0.1)

    def train(model, optimizer, loader):
        for x in loader:
            model(x).sum().backward()
            optimizer.step()

    torch_xla.launch(main)
    """
    assert findings(code, "XLA105") == []


def test_xla_fsdp_wrapped_model_keeps_its_plain_step():
    code = """
    import torch
    import torch_xla
    from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP

    def train(index):
        model = FSDP(net.to(torch_xla.device()))
        opt = torch.optim.AdamW(model.parameters())
        for x in loader:
            model(x).sum().backward()
            opt.step()

    torch_xla.launch(train)
    """
    assert findings(code, "XLA105") == []


TWO_STEPS = """
import torch

for x in loader:
    d_opt.zero_grad()
    D(x).sum().backward()
    d_opt.step()
    g_opt.zero_grad()
    G(x).sum().backward()
    g_opt.step()
"""


def test_fixing_one_step_leaves_the_other_reported():
    # xm.optimizer_step is what this rule writes: it must not make the script look written
    # for XLA and silence the second step (order of quick fixes in the editor).
    first, second = findings(TWO_STEPS, "XLA105")
    assert "d_opt" in first.message and "g_opt" in second.message
    after = apply_fix(src(TWO_STEPS), first)
    assert "xm.optimizer_step(d_opt)" in after
    (left,) = findings(after, "XLA105")
    assert "xm.optimizer_step(g_opt)" in left.message


def test_a_sync_or_step_closure_written_by_other_fixes_does_not_silence_the_step():
    # XLA107 writes the sync, XLA401 the step closure, XLA101 the device: a CUDA script with
    # those fixes applied still needs this one.
    head = "import torch_xla\nimport torch_xla.core.xla_model as xm\n"
    for extra in (
        "torch_xla.sync()",
        "xm.mark_step()",
        "xm.add_step_closure(print, args=(1,))",
        "x = x.to(torch_xla.device())",
    ):
        code = head + src(LOOP).replace(
            "        optimizer.step()\n", f"        optimizer.step()\n        {extra}\n"
        )
        assert extra in code
        assert len(findings(code, "XLA105")) == 1, extra


def test_single_process_script_written_for_xla_by_hand_keeps_its_plain_step():
    # API no fix writes: a ParallelLoader, metrics, torch_xla.compile; or an XLA loader in a
    # single-process script (XLA106 wraps loaders of distributed scripts only).
    for head, loader in (
        (
            "import torch_xla.distributed.parallel_loader as pl",
            "pl.ParallelLoader(loader, [dev]).per_device_loader(dev)",
        ),
        ("import torch_xla.debug.metrics as met", "loader"),
        ("import torch_xla.distributed.parallel_loader as pl", "pl.MpDeviceLoader(loader, dev)"),
    ):
        code = f"""
import torch
import torch_xla
{head}

for x in {loader}:
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
    torch_xla.sync()
"""
        assert findings(code, "XLA105") == [], head


def test_an_optimizer_over_a_perturbation_of_the_data_is_no_model_step():
    # TRADES' l_2 attack (held-out 74): `optimizer_delta = optim.SGD([delta], ...)` with delta
    # made from the batch; each replica's delta is its own, so no all-reduce belongs there.
    attack = """
    import torch
    from torch import optim
    from torch.autograd import Variable

    def attack(model, x, steps):
        delta = 0.001 * torch.randn(x.shape).cuda().detach()
        delta = Variable(delta.data, requires_grad=True)
        optimizer_delta = optim.SGD([delta], lr=0.1)
        for _ in range(steps):
            optimizer_delta.zero_grad()
            (-model(x + delta).sum()).backward()
            optimizer_delta.step()
        return x + delta
    """
    assert findings(attack, "XLA105") == []
    # Over a module's Parameters the same shape of code is a model step.
    weights = attack.replace(
        "delta = Variable(delta.data, requires_grad=True)",
        "delta = torch.nn.Parameter(delta.data)",
    )
    assert len(findings(weights, "XLA105")) == 1
