from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fix_one, fixed, src

LOOP = """
import torch
from torch.cuda.amp import GradScaler

scaler = GradScaler(init_scale=1024.0)
for x, y in loader:
    optimizer.zero_grad()
    with torch.autocast("xla", dtype=torch.bfloat16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
"""


def test_modern_fix_removes_the_scaler_and_keeps_backward_and_step():
    (f,) = findings(LOOP, "XLA103")
    assert f.span.start.line == 3 and "no loss scaling is needed" in f.message
    assert fixed(LOOP, "XLA103") == src(
        """
        import torch

        for x, y in loader:
            optimizer.zero_grad()
            with torch.autocast("xla", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        """
    )


def test_legacy_fix_is_torch_xla_amp_grad_scaler_with_the_same_arguments():
    out = fixed(LOOP, "XLA103", target="legacy")
    assert out == src(LOOP).replace(
        "from torch.cuda.amp import GradScaler\n",
        "import torch_xla.amp\n",
    ).replace("scaler = GradScaler(", "scaler = torch_xla.amp.GradScaler(")


def test_device_first_forms_drop_the_device_for_legacy():
    code = """
    import torch
    a = torch.amp.GradScaler("cuda", 1024.0, enabled=True)
    b = torch.GradScaler(device="cuda", growth_interval=10)
    c = torch.amp.GradScaler()
    """
    assert [f.span.start.line for f in findings(code, "XLA103", "legacy")] == [1, 2, 3]
    assert fixed(code, "XLA103", target="legacy") == src(
        """
        import torch
        import torch_xla.amp
        a = torch_xla.amp.GradScaler(1024.0, enabled=True)
        b = torch_xla.amp.GradScaler(growth_interval=10)
        c = torch_xla.amp.GradScaler()
        """
    )


def test_modern_removal_follows_the_alias_and_parenthesises_compound_losses():
    code = """
    import torch.cuda.amp as A

    s = A.GradScaler()
    def step(x):
        s.scale(loss_a + loss_b).backward()
        return s.step(opt)
    for x in loader:
        step(x)
        s.update()
    """
    assert fixed(code, "XLA103") == src(
        """
        def step(x):
            (loss_a + loss_b).backward()
            return opt.step()
        for x in loader:
            step(x)
        """
    )


def test_other_uses_of_the_scaler_make_removal_manual_with_an_xla_scaler_quick_fix():
    code = """
    import torch
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    for x in loader:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    torch.save({"scaler": scaler.state_dict()}, "ckpt.pt")
    """
    (f,) = findings(code, "XLA103")
    assert "line 7" in f.manual and 'torch.amp.GradScaler("xla")' in f.manual
    assert f.fix is not None and not f.fix.safe
    # The diagnostic itself says why the removal it recommends is not the fix offered.
    assert "removing the scaler is not automatic here" in f.message and "line 7" in f.message
    # fix-all leaves an unsafe fix alone ...
    assert fixed(code, "XLA103") == src(code)
    # ... and the quick fix keeps the scaler, on the XLA device.
    out = fix_one(code, f)
    assert 'scaler = torch.amp.GradScaler("xla", enabled=use_amp)' in out
    assert findings(out, "XLA103") == []


def test_scaler_not_bound_to_a_plain_name_is_manual():
    code = """
    import torch
    class T:
        def __init__(self):
            self.scaler = torch.cuda.amp.GradScaler()
    """
    (f,) = findings(code, "XLA103")
    assert "not assigned straight to one name" in f.manual


def test_a_scaler_chosen_by_a_flag_says_so():
    # held-out 37's segmentation trainer: ``scaler = GradScaler() if args.amp else None`` is
    # assigned to a plain name, but only on one side of a conditional.
    code = """
    import torch
    scaler = torch.cuda.amp.GradScaler() if args.amp else None
    """
    (f,) = findings(code, "XLA103")
    assert "exists only when `args.amp` holds" in f.message
    assert "plain variable" not in f.message


def test_fp16_autocast_makes_the_removal_a_reviewed_quick_fix():
    code = """
    import torch
    scaler = torch.cuda.amp.GradScaler()
    for x in loader:
        with torch.autocast("xla", dtype=torch.float16):
            loss = model(x)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    """
    (f,) = findings(code, "XLA103")
    assert f.fix is not None and not f.fix.safe


def test_xla_scalers_and_removed_scalers_report_nothing():
    converted = """
    import torch
    import torch_xla.amp
    s1 = torch.amp.GradScaler("xla")
    s2 = torch.GradScaler(device="xla")
    s3 = torch_xla.amp.GradScaler()
    for x in loader:
        loss.backward()
        optimizer.step()
    """
    for target in ("modern", "legacy"):
        assert findings(converted, "XLA103", target) == []


def test_hover_states_both_targets():
    rule = get_rule("XLA103")
    assert rule is not None
    text = rule.hover["torch.cuda.amp.GradScaler"]
    assert "torch_xla.amp.GradScaler" in text and 'torch.amp.GradScaler("xla")' in text
    assert set(rule.hover) >= {
        "torch.cuda.amp.GradScaler",
        "torch.amp.GradScaler",
        "torch.GradScaler",
    }


def test_removed_scaler_statements_keep_their_comments():
    code = """
    import torch
    # Loss scaling keeps fp16 gradients from underflowing.
    scaler = torch.cuda.amp.GradScaler()  # dynamic scale
    for x in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        # grow or shrink the scale
        scaler.update()  # every step
    """
    out = fixed(code, "XLA103")
    for comment in ("# Loss scaling", "# dynamic scale", "# grow or shrink", "# every step"):
        assert comment in out
    assert "scaler" not in out.replace("# Loss scaling", "")


def _amp_loop(autocast: str, extra: str = "") -> str:
    return f"""
    import torch
    {extra}
    scaler = torch.cuda.amp.GradScaler()
    for x in loader:
        with {autocast}:
            loss = model(x)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    """


def test_removal_is_safe_only_when_the_script_ends_up_in_bfloat16():
    bf16 = [
        "torch.cuda.amp.autocast()",  # XLA102 makes it bf16
        'torch.autocast("cuda")',
        'torch.autocast("cuda", dtype=torch.bfloat16)',
    ]
    for autocast in bf16:
        (f,) = findings(_amp_loop(autocast), "XLA103")
        assert f.fix.safe, autocast
    fp16 = [
        ('torch.autocast("cuda", dtype=torch.float16)', "", "runs in float16"),
        ('torch.autocast("cuda", dtype=ptdtype)', "", "`ptdtype` may be float16"),
        ("torch.cuda.amp.autocast()", "model = model.half()", "`.half()`"),
    ]
    for autocast, extra, why in fp16:
        (f,) = findings(_amp_loop(autocast, extra), "XLA103")
        assert not f.fix.safe and why in f.fix.review_reason, (autocast, f.fix.review_reason)
        # The review fix keeps loss scaling on XLA; fix-all leaves the scaler alone.
        assert f.fix.ops[0].code == 'torch.amp.GradScaler("xla")'
        assert "scaler.update()" in fixed(_amp_loop(autocast, extra), "XLA103")


def test_apex_amp_and_sharded_scaler_are_found():
    code = """
    from apex import amp
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
    model, opt = amp.initialize(model, opt, opt_level="O1")
    with amp.scale_loss(loss, opt) as scaled:
        scaled.backward()
    scaler = ShardedGradScaler()
    """
    found = findings(code, "XLA103")
    assert [f.span.start.line for f in found] == [2, 3, 5]
    assert found[0].fix is None and "amp.initialize" in found[0].message


def test_dtype_less_autocast_on_an_unknown_device_keeps_the_removal_for_review():
    code = """
    import torch

    def train(model, device, amp):
        scaler = torch.cuda.amp.GradScaler(enabled=amp)
        for x in loader:
            with torch.autocast(device.type, enabled=amp):
                loss = model(x)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    """
    (f,) = findings(code, "XLA103")
    assert not f.fix.safe and "default is float16" in f.fix.review_reason


def test_hand_rolled_fp16_loss_scaling_is_reported_without_a_fix():
    code = """
    import torch

    class Loop:
        def backward(self, loss):
            if self.half_precision:
                scale = self.grad_scale
                (loss * self.grad_scale).backward()
            else:
                loss.backward()

        def step(self, loss):
            factor = 2.0 ** self.log2_scale
            scaled = loss * factor
            scaled.backward()
    """
    found = findings(code, "XLA103")
    assert [f.span.start.line + 1 for f in found] == [7, 14]
    for f in found:
        assert f.fix is None and "bfloat16" in f.manual
        assert "hand-rolled fp16 loss scaling" in f.message
    assert "`loss * self.grad_scale`" in found[0].message
    assert found[1].related and found[1].related[0][0].start.line + 1 == 12


def test_weights_accumulation_factors_and_bf16_xla_steps_are_not_loss_scaling():
    code = """
    import torch
    import torch_xla

    def step(model, x, y, weight, accum, use_fp16):
        scale = 1.0 / accum
        (model(x, y) * scale).backward()
        (model(x, y) * weight).backward()
        if use_fp16:
            (model(x, y) * weight).backward()
        else:
            (model(x, y) * self.loss_scale).backward()
        with torch.autocast("xla", dtype=torch.bfloat16):
            loss = model(x, y)
        loss.backward()
        torch_xla.sync()
    """
    assert findings(code, "XLA103") == []


def test_apex_at_opt_level_o0_is_plain_fp32_and_gets_no_autocast():
    # held-out 22 r4 (hysts' default precision "O0"): autocast would change the precision.
    code = """
    from apex import amp
    model, opt = amp.initialize(model, opt, opt_level="O0")
    with amp.scale_loss(loss, opt) as scaled:
        scaled.backward()
    """
    found = findings(code, "XLA103")
    assert len(found) == 2
    assert all('"O0" is plain fp32' in f.message and "autocast" not in f.manual for f in found)
    from_config = code.replace('"O0"', "cfg.precision")
    assert all("set out of sight" in f.message for f in findings(from_config, "XLA103"))
    default = code.replace(', opt_level="O0"', "")
    assert all("bfloat16" in f.message for f in findings(default, "XLA103"))


def test_a_scaler_kept_by_the_fix_is_not_told_to_be_removed():
    # Held-out 58's AWADA: the scaler's state is restored on resume, so it cannot be removed
    # automatically; the message said "remove the scaler" above a fix that keeps it.
    code = """
    import torch
    scaler = torch.amp.GradScaler("cuda", enabled=True)
    scaler.load_state_dict(ckpt["scaler"])
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    """
    (f,) = findings(code, "XLA103")
    assert f.fix.title.startswith("Keep loss scaling on XLA") and not f.fix.safe
    assert "remove the scaler (" not in f.message and "cannot be removed automatically" in f.message


def test_apex_advice_names_the_master_params_to_replace():
    # Held-out 59's ATLOP: clip_grad_norm_(amp.master_params(optimizer), ...) is a NameError
    # once apex is dropped as the advice says.
    code = """
    import torch
    from apex import amp
    model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
    with amp.scale_loss(loss, optimizer) as scaled:
        scaled.backward()
    torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), 1.0)
    """
    *found, masters = findings(code, "XLA103")
    assert found and all("amp.master_params(optimizer) (line 6)" in f.manual for f in found)
    # Its own site too (held-out 122, DialoGPT): advice only, no fix.
    assert masters.span.start.line == 5 and masters.fix is None
    assert "`amp.master_params(optimizer)` is apex AMP's fp32 master copy" in masters.message
    assert "`model.parameters()`" in masters.manual


def test_apex_advice_names_its_checkpoint_state():
    # BYOL-PyTorch (held-out 119) saves amp.state_dict() and restores amp.load_state_dict().
    code = """
    import torch
    from apex import amp
    model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
    amp.load_state_dict(torch.load("ckpt.pth")["amp"])
    with amp.scale_loss(loss, optimizer) as scaled:
        scaled.backward()
    torch.save({"amp": amp.state_dict()}, "ckpt.pth")
    """
    found = findings(code, "XLA103")
    assert len(found) == 2
    assert all("amp.load_state_dict() (lines 4, 7)" in f.manual for f in found)
