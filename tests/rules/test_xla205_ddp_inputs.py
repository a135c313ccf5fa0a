"""XLA205: dropping DDP's device_ids is safe only when every forward input is on the device.

With ``device_ids`` DDP moves each forward's CPU inputs onto the model's device; without it
an XLA model gets a CPU tensor ("Expected XLA tensor. Got: torch.FloatTensor").
"""

from tests.helpers import findings, fixed, src

CPU_INPUT = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

def demo_basic(rank):
    model = ToyModel().to(rank)
    ddp_model = DDP(model, device_ids=[rank])
    outputs = ddp_model(torch.randn(20, 10))
    labels = torch.randn(20, 5).to(rank)
"""


def _ddp(found):
    (ddp,) = [f for f in found if f.fix is not None]
    return ddp


def test_cpu_forward_input_makes_the_drop_a_review_and_flags_the_forward():
    found = findings(CPU_INPUT, "XLA205")
    ddp = _ddp(found)
    assert not ddp.fix.safe
    assert "device_ids also moved each forward's inputs onto the device (line 7)" in ddp.message
    assert "line 7 passes a CPU tensor (`torch.randn(20, 10)`)" in ddp.fix.review_reason
    (forward,) = [f for f in found if f.fix is None]
    assert forward.span.start.line == 6 and "CPU tensor" in forward.message
    assert forward.manual == "move the inputs with .to(device)"
    # Fix-all leaves device_ids (and so DDP's input move) in place.
    assert fixed(CPU_INPUT, "XLA205") == src(CPU_INPUT)
    assert "device_ids" not in fixed(CPU_INPUT, "XLA205", unsafe=True)


def test_explicitly_moved_inputs_keep_the_drop_safe():
    code = """
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    def main(rank, device, loader):
        model = DDP(Net().to(device), device_ids=[rank])
        for images, labels in loader:
            images, labels = images.to(device), labels.cuda(non_blocking=True)
            out = model(images.float(), mask=None)
            extra = model(torch.zeros(2, 3, device=device), flag=True)
    """
    (f,) = findings(code, "XLA205")
    assert f.fix.safe
    assert "model = DDP(Net().to(device))" in fixed(code, "XLA205")


def test_a_plain_dataloader_batch_is_not_visibly_on_the_device():
    code = """
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(net, device_ids=[rank])
    for x, y in loader:
        loss = model(x.to(torch.float16)).sum()
    """
    f = _ddp(findings(code, "XLA205"))
    assert not f.fix.safe and "(`x.to(torch.float16)`)" in f.fix.review_reason


def test_mp_device_loader_batches_and_a_training_function_parameter_are_followed():
    code = """
    import torch_xla.distributed.parallel_loader as pl
    from torch.nn.parallel import DistributedDataParallel as DDP

    def train(net, loader, device):
        for batch in pl.MpDeviceLoader(loader, device):
            net(batch["x"])

    def main():
        model = DDP(Net(), device_ids=[rank])
        train(model, loader, device)
    """
    assert findings(code, "XLA205")[0].fix.safe
    cpu = code.replace('net(batch["x"])', 'net(batch["x"].cpu())')
    f = _ddp(findings(cpu, "XLA205"))
    assert not f.fix.safe and "line 6 passes" in f.fix.review_reason


def test_self_attribute_model_and_a_function_of_another_module_are_reviewed():
    code = """
    from torch.nn.parallel import DistributedDataParallel as DDP
    from engine import train_one_epoch

    class Trainer:
        def __init__(self, model, rank):
            self.model = DDP(model, device_ids=[rank])

        def step(self, batch):
            return self.model(batch)

    def main():
        model = DDP(net, device_ids=[rank])
        train_one_epoch(model, loader)
    """
    first, second = sorted(findings(code, "XLA205"), key=lambda f: f.span.start.line)
    assert not first.fix.safe and "(`batch`)" in first.fix.review_reason
    assert not second.fix.safe
    assert "passes `model` to `train_one_epoch`, whose forward calls this file does not show" in (
        second.fix.review_reason
    )


def test_local_batch_function_returning_moved_tensors_keeps_the_drop_safe():
    code = """
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    def get_batch():
        x = torch.randint(0, 5, (4, 8))
        x = x.pin_memory().to(device, non_blocking=True)
        return x, x

    model = DDP(model, device_ids=[local_rank])
    raw_model = model.module if ddp else model
    X, Y = get_batch()
    while True:
        logits, loss = model(X, Y)
        X, Y = get_batch()
    """
    assert findings(code, "XLA205")[0].fix.safe


def test_output_device_alone_moves_nothing():
    code = """
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(net, output_device=rank)
    model(x)
    """
    assert findings(code, "XLA205")[0].fix.safe


AFTER_DROP = """
import torch
import torch_xla
from torch.nn.parallel import DistributedDataParallel as DDP

def demo_basic(rank):
    model = ToyModel().to(torch_xla.device())
    ddp_model = DDP(model)
    outputs = ddp_model(torch.randn(20, 10))
"""


def _inputs(found):
    return [f for f in found if "CPU tensor" in f.message]


def test_cpu_input_is_still_reported_once_device_ids_are_gone():
    """The input finding does not depend on device_ids: after the review fix dropped them
    (or where they were never written) the XLA model still gets a CPU tensor."""
    (f,) = _inputs(findings(AFTER_DROP, "XLA205"))
    assert f.span.start.line == 7 and "torch_xla.device()" in f.message
    assert f.fix is not None and f.fix.safe
    assert "ddp_model(torch.randn(20, 10).to(torch_xla.device()))" in fixed(AFTER_DROP, "XLA205")
    assert _inputs(findings(fixed(AFTER_DROP, "XLA205"), "XLA205")) == []


def test_the_unsafe_conversion_keeps_the_input_on_the_device():
    code = AFTER_DROP.replace("DDP(model)", "DDP(model, device_ids=[0])")
    out = fixed(code, "XLA205", unsafe=True)
    assert "DDP(model)" in out
    assert "ddp_model(torch.randn(20, 10).to(torch_xla.device()))" in out


def test_a_device_name_bound_once_is_reused_and_a_far_one_is_only_named():
    named = AFTER_DROP.replace(
        "    model = ToyModel().to(torch_xla.device())",
        "    device = torch_xla.device()\n    model = ToyModel().to(device)",
    )
    assert "ddp_model(torch.randn(20, 10).to(device))" in fixed(named, "XLA205")
    elsewhere = """
    import torch
    import torch_xla
    from torch.nn.parallel import DistributedDataParallel as DDP

    def build(device):
        return DDP(ToyModel().to(device))

    def train(device):
        ddp_model = DDP(ToyModel().to(device))
        device = other
        ddp_model(torch.randn(20, 10))
    """
    (f,) = _inputs(findings(elsewhere, "XLA205"))
    assert f.fix is None and f.manual == "move the input with .to(device)"


def test_no_input_finding_for_a_cpu_model_or_before_the_conversion():
    on_cpu = AFTER_DROP.replace(".to(torch_xla.device())", '.to("cpu")')
    assert _inputs(findings(on_cpu, "XLA205")) == []
    moved = AFTER_DROP.replace("torch.randn(20, 10)", "torch.randn(20, 10, device=dev)")
    assert _inputs(findings(moved, "XLA205")) == []
    cuda = AFTER_DROP.replace("import torch_xla\n", "").replace("torch_xla.device()", "rank")
    assert _inputs(findings(cuda, "XLA205")) == []


def test_backend_from_get_default_backend_for_device_stays_reported_after_conversion():
    """pytorch/examples ddp: ``backend = dist.get_default_backend_for_device(acc)`` raises
    ValueError for the XLA device; the finding must survive the conversion of ``acc``."""
    code = """
    import torch
    import torch_xla
    import torch.distributed as dist

    def spmd_main():
        acc = torch_xla.device()
        backend = torch.distributed.get_default_backend_for_device(acc)
        dist.init_process_group(backend=backend)
    """
    (f,) = [x for x in findings(code, "XLA205") if "get_default_backend_for_device" in x.message]
    assert f.fix is None and f.span.start.line == 7 and "ValueError" in f.message
    computed = code.replace("torch.distributed.get_default_backend_for_device(acc)", "pick(acc)")
    assert findings(computed, "XLA205") == []  # an XLA script computing its own backend


def test_a_workspace_helper_that_only_saves_the_state_runs_no_forward(tmp_path):
    # held-out 26 (SimCLR's save_model in model.py reads state dicts only): no forward input
    # goes through it, so dropping device_ids stays safe; a helper that calls the model does not.
    from xla_lens.engine import analyze

    (tmp_path / "helpers.py").write_text(
        src(
            """
            import torch
            def save_model(args, model, optimizer):
                if isinstance(model, torch.nn.DataParallel):
                    torch.save(model.module.state_dict(), args.out)
                else:
                    torch.save(model.state_dict(), args.out)
            def run(model, x):
                return model(x)
            """
        ),
        encoding="utf-8",
    )
    body = """
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    from helpers import run, save_model

    def main(rank, args, net, opt):
        model = DDP(net.to(rank), device_ids=[rank])
        {call}
    """
    script = tmp_path / "train.py"
    for call, safe in (("save_model(args, model, opt)", True), ("run(model, 3)", False)):
        script.write_text(src(body.replace("{call}", call)), encoding="utf-8")
        result = analyze(script.read_text(), str(script))
        (f,) = [f for f in result.findings if f.code == "XLA205" and f.fix is not None]
        assert f.fix.safe is safe, (call, f.fix.review_reason)


def test_a_loader_that_tests_the_module_and_returns_it_to_a_dropped_name_runs_no_forward(
    tmp_path,
):
    # vits' utils.load_checkpoint (held-out 37): ``hasattr(model, "module")`` and
    # ``return model, optimizer, lr, it`` into ``_, _, _, epoch = ...``: nothing runs forward.
    from xla_lens.engine import analyze

    (tmp_path / "utils.py").write_text(
        src(
            """
            import torch
            def load_checkpoint(path, model, optimizer=None):
                state = torch.load(path, map_location="cpu")
                if hasattr(model, "module"):
                    model.module.load_state_dict(state["model"])
                else:
                    model.load_state_dict(state["model"])
                return model, optimizer, state["lr"], state["iteration"]
            """
        ),
        encoding="utf-8",
    )
    body = """
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    import utils

    def main(rank, net, opt):
        model = DDP(net.to(rank), device_ids=[rank])
        {call}
    """
    script = tmp_path / "train.py"
    for call, safe in (
        ("_, _, _, epoch = utils.load_checkpoint('g.pth', model, opt)", True),
        ("model, _, _, epoch = utils.load_checkpoint('g.pth', model, opt)", False),
    ):
        script.write_text(src(body.replace("{call}", call)), encoding="utf-8")
        result = analyze(script.read_text(), str(script))
        (f,) = [f for f in result.findings if f.code == "XLA205" and f.fix is not None]
        assert f.fix.safe is safe, (call, f.fix.review_reason)


def test_an_op_on_model_outputs_is_not_called_a_cpu_tensor():
    # STCN (held-out 171): `values = torch.cat([ref_v, prev_v], 2)` of the model's own outputs
    # was reported as "a CPU tensor"; it lives where its inputs do. Not certain either way.
    code = """
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    def train(rank, batch):
        model = DDP(Net().to(rank), device_ids=[rank])
        frames = batch.to(rank)
        ref_v = encoder.encode(frames[:, 0])
        prev_v = encoder.encode(frames[:, 1])
        values = torch.cat([ref_v, prev_v], 2)
        return model("segment", frames[:, 2], values)
    """
    found = findings(code, "XLA205")
    assert not [f for f in found if f.fix is None and "CPU tensor" in f.message]
    assert "a CPU tensor" not in (_ddp(found).fix.review_reason or "")
