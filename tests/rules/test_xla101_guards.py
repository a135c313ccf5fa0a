"""XLA101: a move that runs only under a test for CUDA never runs on an XLA host, so its
rewrite alone leaves the model on the CPU: the fix waits for review and names the guard."""

from tests.helpers import findings, fixed


def test_move_under_a_device_type_test_in_a_helper_handed_the_device_needs_review():
    # held-out 17 (3D-ResNets model.py): the only model move, in a helper handed the device.
    code = """
    import torch.nn as nn
    def place(net, device):
        if device.type == "cuda":
            net = net.cuda()
        return net
    """
    (f,) = [f for f in findings(code, "XLA101") if ".cuda()" in f.message]
    assert f.fix is not None and not f.fix.safe
    assert 'if device.type == "cuda":' in f.fix.review_reason


def test_move_under_a_test_against_the_cpu_stays_safe():
    code = """
    import torch
    def place(net, device):
        if device.type != "cpu":
            net = net.cuda()
        return net
    """
    (f,) = [f for f in findings(code, "XLA101") if ".cuda()" in f.message]
    assert f.fix is not None and f.fix.safe


def test_a_default_argument_test_is_no_cuda_guard():
    # held-out 16 (ddim): `if device is None:` picks a default; the picker always runs.
    code = """
    import torch
    class Runner:
        def __init__(self, device=None):
            if device is None:
                device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
            self.device = device
    Runner()
    """
    (f,) = findings(code, "XLA101")
    assert f.fix is not None and f.fix.safe, f.fix.review_reason


def test_an_availability_flag_stored_on_the_options_keeps_only_the_users_flag():
    # held-out 16 (pygcn): `args.cuda = not args.no_cuda and torch.cuda.is_available()`.
    code = """
    import argparse
    import torch
    p = argparse.ArgumentParser()
    p.add_argument("--no-cuda", action="store_true")
    args = p.parse_args()
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    model = torch.nn.Linear(4, 2)
    if args.cuda:
        model.cuda()
    """
    found = findings(code, "XLA101")
    (flag,) = [f for f in found if "args.cuda is whether CUDA is available" in f.message]
    assert flag.fix is not None and not flag.fix.safe
    assert "args.cuda = not args.no_cuda\n" in fixed(code, "XLA101", unsafe=True)
    (move,) = [f for f in found if ".cuda()" in f.message]
    assert not move.fix.safe and "`if args.cuda:`" in move.fix.review_reason


def test_the_flag_review_names_cuda_queries_it_would_then_run():
    # Held-out 69 (dgcnn): `if args.cuda:` also prints torch.cuda.current_device(), which
    # raises without CUDA; once the reviewed fix makes args.cuda true there, it runs.
    code = """
    import argparse
    import torch
    p = argparse.ArgumentParser()
    p.add_argument("--no-cuda", action="store_true")
    args = p.parse_args()
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    model = torch.nn.Linear(4, 2)
    if args.cuda:
        print("Using GPU", torch.cuda.current_device(), torch.cuda.device_count())
        model.cuda()
    """
    (flag,) = [f for f in findings(code, "XLA101") if "args.cuda is whether" in f.message]
    assert flag.fix.review_reason.endswith(
        "; and line 9 `torch.cuda.current_device()` raises on a host without CUDA (no fix "
        "changes that: remove it or give it an XLA answer, e.g. xr.local_ordinal())"
    )
    assert "device_count" not in flag.fix.review_reason  # 0 without CUDA: no raise


def test_a_move_under_an_elif_names_the_elif_test():
    # Held-out 24 (llama-recipes): `if is_xpu_available(): ... elif torch.cuda.is_available():
    # model.to("cuda")`; the guard that skips the move on an XLA host is the elif's.
    code = """
    import torch
    from accelerate.utils import is_xpu_available
    model = torch.nn.Linear(2, 2)
    if is_xpu_available():
        model.to("xpu:0")
    elif torch.cuda.is_available():
        model.to("cuda")
    """
    (f,) = [x for x in findings(code, "XLA101") if x.span.start.line == 6]
    assert "it sits under `if torch.cuda.is_available():`" in f.message
    assert "is_xpu_available" not in f.message


def test_a_move_under_an_availability_test_also_makes_the_test_true():
    # Held-out 23 (SupContrast main_ce): rewriting the move alone converts nothing on an XLA
    # host, where the test is False; the reviewed fix makes the test what a CUDA host computed.
    code = """
    import torch
    def set_model(model, opt):
        if torch.cuda.is_available() and not opt.cpu:
            model = model.cuda()
        return model
    """
    (f,) = findings(code, "XLA101")
    assert not f.fix.safe and "makes that test `not opt.cpu`" in f.fix.review_reason
    assert "    if not opt.cpu:\n        model = model.to(torch_xla.device())" in fixed(
        code, "XLA101", unsafe=True
    )


def test_a_guarded_block_that_needs_cuda_keeps_its_test():
    # torch.cuda.set_device would fail once the block runs on the XLA host.
    code = """
    import torch
    def set_model(model, gpu):
        if torch.cuda.is_available():
            torch.cuda.set_device(gpu)
            model = model.cuda()
        return model
    """
    (f,) = [f for f in findings(code, "XLA101") if ".cuda()" in f.message]
    assert not f.fix.safe and "the guard keeps this code from running there" in f.fix.review_reason
    assert "    if torch.cuda.is_available():\n" in fixed(code, "XLA101", unsafe=True)


def test_a_move_on_the_else_side_keeps_the_test():
    code = """
    import torch
    def set_model(model):
        if not torch.cuda.is_available():
            print("cpu")
        else:
            model = model.cuda()
        return model
    """
    (f,) = [f for f in findings(code, "XLA101") if ".cuda()" in f.message]
    assert not f.fix.safe and "`True`" not in f.fix.review_reason


def test_a_device_handed_down_a_long_chain_to_a_placement_stays_safe():
    # held-out 27 (YOLOv4's train.py): main -> train(device=) -> Yolo_loss(device=) ->
    # self.device -> `.to(device=self.device)`; past the follow budget, a placement is judged.
    code = """
    import torch
    class Loss:
        def __init__(self, device=None):
            self.device = device
        def target(self, n):
            return torch.zeros(n, 4).to(device=self.device)
    def train(model, device):
        crit = Loss(device=device)
        return crit.target(3)
    if __name__ == "__main__":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(2, 2).to(device=device)
        train(model=model, device=device)
    """
    (f,) = findings(code, "XLA101")
    assert f.fix.safe, f.fix.review_reason
    stringly = code.replace(".to(device=self.device)", ".to(self.device + 'x')")
    (g,) = findings(stringly, "XLA101")
    assert not g.fix.safe


def test_a_device_count_on_the_options_that_only_scales_the_batch_is_no_placement():
    # held-out 40 (deep-text-recognition-benchmark): `opt.num_gpu = torch.cuda.device_count()`
    # then `if opt.num_gpu > 1:` multiplies batch size and workers: nothing there places on
    # CUDA, so "the CUDA placement it turns on never runs" would be false (XLA403 still says
    # device_count() counts CUDA devices).
    code = """
    import torch

    def setup(opt):
        opt.num_gpu = torch.cuda.device_count()
        if opt.num_gpu > 1:
            opt.workers = opt.workers * opt.num_gpu
            opt.batch_size = opt.batch_size * opt.num_gpu
    """
    assert findings(code, "XLA101") == []
    placing = code.replace("opt.workers = opt.workers * opt.num_gpu", "torch.cuda.set_device(0)")
    (f,) = findings(placing, "XLA101")
    assert "is whether CUDA is available" in f.message


def test_a_branch_a_fix_converted_is_no_cuda_mode_of_the_script():
    # held-out 49's semseg: once the DDP branch's `.cuda()` is the XLA device, the `else`
    # (`nn.DataParallel(model.cuda())`) must still be converted: `if args.distributed:` is not
    # the script's XLA/CUDA switch. A test that names the XLA mode still is.
    code = """
    import torch
    import torch_xla

    def build(args, model):
        if args.distributed:
            model = torch.nn.parallel.DistributedDataParallel(model.to(torch_xla.device()))
        else:
            model = model.cuda()
        return model
    """
    assert any(".cuda()" in f.message for f in findings(code, "XLA101"))
    switch = code.replace("args.distributed", "args.use_xla")
    assert not any(".cuda()" in f.message for f in findings(switch, "XLA101"))
