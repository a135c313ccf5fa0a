from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

RESUME = """
import torch

def resume(args, model, optimizer):
    loc = "cuda:{}".format(args.gpu)
    checkpoint = torch.load(args.resume, map_location=loc)
    args.start_epoch = checkpoint["epoch"]
    model.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    if "scaler" in checkpoint:
        print("scaler state present")
"""


def test_a_checkpoint_used_through_load_state_dict_loads_on_the_cpu_safely():
    (f,) = findings(RESUME, "XLA115")
    assert f.fix.safe
    assert 'torch.load(args.resume, map_location="cpu")' in fixed(RESUME, "XLA115")


def test_every_spelling_of_a_cuda_map_location():
    code = """
    import torch
    a = torch.load(p, map_location="cuda:0")
    b = torch.load(p, map_location=f"cuda:{rank}")
    c = torch.load(p, "cuda")
    d = torch.load(p, map_location=torch.device("cuda", rank))
    e = torch.load(p, map_location="cpu")
    f = torch.load(p)
    """
    assert [f.span.start.line + 1 for f in findings(code, "XLA115")] == [2, 3, 4, 5]


def test_a_loaded_tensor_or_whole_model_needs_review():
    code = """
    import torch
    ckpt = torch.load(path, map_location="cuda:0")
    best_acc1 = ckpt["best_acc1"]
    model = torch.load(other, map_location="cuda:0")
    model.eval()
    """
    first, second = findings(code, "XLA115")
    assert not first.fix.safe and 'ckpt["best_acc1"]' in first.fix.review_reason
    assert not second.fix.safe and "needs review" in second.message
    assert fixed(code, "XLA115") == src(code)


def test_rule_metadata():
    rule = get_rule("XLA115")
    assert rule is not None and rule.has_fix and "torch.load" in rule.hover


CUDA_RESUME = """
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
netD = Net().to(device)
netD.load_state_dict(torch.load(opt.netD))
checkpoint = torch.load(args.resume)
optimizer.load_state_dict(checkpoint["optimizer"])
start_epoch = checkpoint["epoch"]
for epoch in range(start_epoch, 10):
    torch.save(netD.state_dict(), f"netD_{epoch}.pth")
"""


def test_a_checkpoint_the_cuda_version_wrote_is_loaded_on_the_cpu():
    found = findings(CUDA_RESUME, "XLA115")
    assert [f.span.start.line + 1 for f in found] == [5, 6]
    assert all(f.fix.safe and "CUDA version" in f.message for f in found)
    out = fixed(CUDA_RESUME, "XLA115")
    assert 'netD.load_state_dict(torch.load(opt.netD, map_location="cpu"))' in out
    assert 'checkpoint = torch.load(args.resume, map_location="cpu")' in out


def test_a_loaded_tensor_of_a_cuda_checkpoint_needs_review():
    code = CUDA_RESUME + 'best_acc1 = checkpoint["best_acc1"]\n'
    first, second = findings(code, "XLA115")
    assert first.fix.safe
    assert not second.fix.safe and 'checkpoint["best_acc1"]' in second.fix.review_reason


def test_quiet_without_cuda_without_a_checkpoint_save_or_on_a_reload_of_its_own_file():
    cpu_only = CUDA_RESUME.replace('"cuda" if torch.cuda.is_available() else "cpu"', '"cpu"')
    assert findings(cpu_only, "XLA115") == []
    no_save = CUDA_RESUME.replace('torch.save(netD.state_dict(), f"netD_{epoch}.pth")', "pass")
    assert findings(no_save, "XLA115") == []
    # Saved by this run a few lines up: after conversion that is xm.save's CPU copy.
    reload = """
    import torch
    model = Net().cuda()
    model.train()
    with open(args.save, "wb") as f:
        torch.save(model, f)
    with open(args.save, "rb") as f:
        model = torch.load(f)
    sd = torch.load("best.pt")
    torch.save(model.state_dict(), "best.pt")
    """
    (f,) = findings(reload, "XLA115")
    assert f.span.start.line == 7


def test_load_state_dict_with_assign_keeps_the_cpu_tensors_so_needs_review():
    code = CUDA_RESUME.replace(
        "netD.load_state_dict(torch.load(opt.netD))",
        "netD.load_state_dict(torch.load(opt.netD), assign=True)",
    )
    first, second = findings(code, "XLA115")
    assert not first.fix.safe and second.fix.safe


def test_a_save_xla108_already_turned_into_xm_save_still_counts():
    """`fix` applies XLA108's safe xm.save and then re-checks the text: while the script still
    runs on CUDA there (a picker left for review), the checkpoint its CUDA version wrote is
    still the one to resume from, and the finding must stay in what is left to review."""
    after_xla108 = CUDA_RESUME.replace(
        "import torch\n", "import torch\nimport torch_xla.core.xla_model as xm\n"
    ).replace("torch.save(netD", "xm.save(netD")
    found = findings(after_xla108, "XLA115")
    assert [f.span.start.line + 1 for f in found] == [6, 7]
    reload = """
    import torch
    import torch_xla.core.xla_model as xm
    model = Net().cuda()
    xm.save(model.state_dict(), "best.pt")
    sd = torch.load("best.pt")
    """
    assert findings(reload, "XLA115") == []


WHOLE_MODULE_IN_A_DICT = """
import torch
import torch.nn as nn

if resume:
    checkpoint = torch.load("ckpt.t7")
    net = checkpoint["net"]
    torch.set_rng_state(checkpoint["rng_state"])
else:
    net = nn.Linear(4, 2)
net.cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)


def save(acc):
    torch.save({"net": net, "acc": acc, "rng_state": torch.get_rng_state()}, "ckpt.t7")
"""


def test_a_dict_holding_the_cuda_module_is_a_checkpoint_the_cuda_run_wrote():
    # held-out 20 (mixup-cifar10): `torch.save({'net': net, ...})` of the CUDA model, resumed
    # with a bare torch.load: on an XLA host that load fails. The review names the first use
    # that keeps tensors (the module), not the RNG state, which must stay on the CPU.
    (f,) = findings(WHOLE_MODULE_IN_A_DICT, "XLA115")
    assert f.span.start.line + 1 == 5 and not f.fix.safe
    assert '`checkpoint["net"]` on line 6' in f.fix.review_reason
    assert "rng_state" not in f.fix.review_reason


def test_each_load_is_judged_by_its_own_uses_and_rekeyed_state_dicts_count():
    # held-out 26 (DeepLabv3's main.py): the train branch loads `checkpoint` for
    # load_state_dict; the eval branch loads it again and strips DataParallel's `module.`
    # prefix in a dict comprehension before load_state_dict. Both load on the CPU safely.
    code = """
    import torch
    def main(model, opt, args):
        model.cuda()
        if args.train:
            checkpoint = torch.load(args.resume)
            start = checkpoint["epoch"]
            model.load_state_dict(checkpoint["state_dict"])
            opt.load_state_dict(checkpoint["optimizer"])
            torch.save({"state_dict": model.state_dict()}, args.resume)
        else:
            checkpoint = torch.load(args.path)
            sd = {k[7:]: v for k, v in checkpoint["state_dict"].items() if "tracked" not in k}
            model.load_state_dict(sd)
            print(checkpoint["note"].shape)
    """
    first, second = findings(code, "XLA115")
    assert first.fix.safe, first.fix.review_reason
    assert not second.fix.safe and 'checkpoint["note"]' in second.fix.review_reason
    kept = code.replace('            print(checkpoint["note"].shape)\n', "")
    assert all(f.fix.safe for f in findings(kept, "XLA115"))
    inline = (
        kept.replace("model.load_state_dict(sd)", "pass")
        .replace("sd = {", "model.load_state_dict({")
        .replace('"tracked" not in k}', '"tracked" not in k})')
    )
    assert "model.load_state_dict({k[7:]" in inline
    assert all(f.fix.safe for f in findings(inline, "XLA115"))
    used_raw = kept.replace("model.load_state_dict(sd)", "print(sd)")
    assert not findings(used_raw, "XLA115")[1].fix.safe


def test_an_entry_of_the_load_handed_straight_to_load_state_dict_is_safe():
    # held-out 27 (RepDistiller's load_teacher).
    code = """
    import torch
    def load_teacher(path, model):
        model.load_state_dict(torch.load(path)["model"])
        torch.save({"model": model.cuda().state_dict()}, path)
    """
    (f,) = findings(code, "XLA115")
    assert f.fix.safe, f.fix.review_reason


def test_a_file_the_script_writes_only_with_plain_objects_is_no_cuda_checkpoint():
    # held-out 27 (the annotated transformer's load_vocab): vocab objects saved and reloaded.
    code = """
    import torch
    def load_vocab(build):
        if not os.path.exists("vocab.pt"):
            vocab_src, vocab_tgt = build()
            torch.save((vocab_src, vocab_tgt), "vocab.pt")
        else:
            vocab_src, vocab_tgt = torch.load("vocab.pt")
        return vocab_src, vocab_tgt
    def train(model):
        model.cuda()
        torch.save(model.state_dict(), "model.pt")
        model.load_state_dict(torch.load("pretrained.pt"))
    """
    found = findings(code, "XLA115")
    assert [f.span.start.line for f in found] == [11]


def test_a_device_attribute_set_to_cuda_is_a_cuda_map_location():
    # YOLOX's trainer (held-out 31): map_location=self.device with self.device = "cuda:{}".
    code = """
    import torch

    class Trainer:
        def __init__(self, rank):
            self.device = "cuda:{}".format(rank)

        def resume(self, path, model):
            model.load_state_dict(torch.load(path, map_location=self.device))
    """
    (f,) = findings(code, "XLA115")
    assert f.fix is not None and f.fix.safe
    assert 'map_location="cpu"' in fixed(code, "XLA115")


def test_a_device_attribute_that_may_be_the_cpu_is_left_alone():
    code = """
    import torch

    class Trainer:
        def __init__(self, rank, use_cpu):
            self.device = "cuda:{}".format(rank)
            if use_cpu:
                self.device = "cpu"

        def resume(self, path, model):
            model.load_state_dict(torch.load(path, map_location=self.device))
    """
    assert findings(code, "XLA115") == []


def test_entries_taken_with_get_or_pop_count_like_subscripts():
    code = """
    import torch

    def resume(path, model, optimizer):
        ckpt = torch.load(path, map_location="cuda:0")
        model.load_state_dict(ckpt.pop("model"))
        optimizer.load_state_dict(ckpt.get("optimizer"))
        return ckpt.get("epoch", 0)
    """
    (f,) = findings(code, "XLA115")
    assert f.fix is not None and f.fix.safe
    tensor = code.replace('return ckpt.get("epoch", 0)', 'return ckpt.pop("ema")')
    (g,) = findings(tensor, "XLA115")
    assert g.fix is not None and not g.fix.safe


def test_a_grad_scaler_state_holds_no_cuda_tensor():
    """PVDM (held-out 100): ``scaler.load_state_dict(torch.load(...))`` restores the scale
    and growth tracker, Python numbers in GradScaler's state dict: nothing to map."""
    code = CUDA_RESUME + (
        "scaler = torch.cuda.amp.GradScaler()\n"
        'scaler.load_state_dict(torch.load("scaler.pth"))\n'
        'other.load_state_dict(torch.load("other.pth"))\n'
        'torch.save(scaler.state_dict(), "scaler.pth")\n'
    )
    found = findings(code, "XLA115")
    assert [f.span.start.line + 1 for f in found] == [5, 6, 13]


def test_a_script_on_the_xla_device_is_not_told_of_its_cuda_version():
    # BarlowTwins on TPU (held-out 119): xm.xla_device() and xm.save, CUDA seeding left in.
    xla = """
    import torch
    import torch_xla.core.xla_model as xm

    torch.cuda.manual_seed_all(0)
    device = xm.xla_device()
    model = torch.nn.Linear(2, 2).to(device)
    ckpt = torch.load("resnet.pth")
    model.load_state_dict(ckpt["model"])
    xm.save({"model": model.state_dict()}, "checkpoint.pth")
    """
    (f,) = findings(xla, "XLA115")
    assert "a checkpoint a CUDA run wrote" in f.message and "CUDA version" not in f.message
    cuda = xla.replace("xm.xla_device()", '"cuda"').replace("xm.save", "torch.save")
    (g,) = findings(cuda, "XLA115")
    assert "the CUDA version of this script wrote" in g.message
