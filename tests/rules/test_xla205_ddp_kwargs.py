"""XLA205: ``DDP(model, device_ids=[rank], **kw)``: the ``**kw`` cannot un-name device_ids
(a second ``device_ids`` in it would be a TypeError), so it is still reported; dropping
device_ids is safe only when the dict provably holds no ``output_device`` (DDP refuses
``output_device`` without ``device_ids``)."""

from tests.helpers import findings, fixed, src


def test_ddp_kwargs_of_unknown_content_still_report_device_ids_with_a_review_fix():
    code = """
    from torch.nn.parallel import DistributedDataParallel as DDP

    def wrap(model, rank, kw, batch):
        net = DDP(model.to(rank), device_ids=[rank], **kw)
        return net(batch.to(rank))
    """
    (f,) = findings(code, "XLA205")
    assert "device_ids=[rank]" in f.message
    assert not f.fix.safe and "`kw`" in f.fix.review_reason
    assert "output_device" in f.fix.review_reason
    assert f.manual and f.manual.startswith("review:")
    # Not applied by fix; applied for review it keeps the **kw.
    assert fixed(code, "XLA205") == src(code)
    assert "net = DDP(model.to(rank), **kw)" in fixed(code, "XLA205", unsafe=True)


def test_ddp_kwargs_built_here_without_output_device_drop_device_ids_safely():
    code = """
    import torch
    import torch.distributed as dist

    def setup(model, device, args, loader):
        ddp_args = {}
        if args.ddp_static_graph:
            # only in newer PyTorch
            ddp_args['static_graph'] = True
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device], **ddp_args)
        for x in loader:
            model(x.to(device))
    """
    (f,) = findings(code, "XLA205")
    assert "device_ids=[device]" in f.message and f.fix.safe
    assert "model = torch.nn.parallel.DistributedDataParallel(model, **ddp_args)" in fixed(
        code, "XLA205"
    )


def test_ddp_kwargs_that_may_hold_output_device_wait_for_review():
    code = """
    from torch.nn.parallel import DistributedDataParallel as DDP

    def setup(model, rank, pin, x):
        kw = dict(find_unused_parameters=True)
        if pin:
            kw["output_device"] = rank
        model = DDP(model, device_ids=[rank], **kw)
        return model(x.to(rank))
    """
    (f,) = findings(code, "XLA205")
    assert not f.fix.safe and "output_device" in f.fix.review_reason


def test_ddp_kwargs_handed_on_elsewhere_wait_for_review():
    code = """
    from torch.nn.parallel import DistributedDataParallel as DDP

    def setup(model, rank, x, extend):
        kw = {"broadcast_buffers": False}
        extend(kw)
        model = DDP(model, device_ids=[rank], **kw)
        return model(x.to(rank))
    """
    (f,) = findings(code, "XLA205")
    assert not f.fix.safe
