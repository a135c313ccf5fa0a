from tests.helpers import findings, fix_one, fixed, src

INIT = """
import torch.distributed as D

D.init_process_group(backend='nccl', world_size=n)
"""


def test_nccl_backend_modern_adds_init_method_and_backend_import():
    (f,) = findings(INIT, "XLA205")
    assert src(INIT).splitlines()[2][f.span.start.col : f.span.end.col] == "'nccl'"
    assert fixed(INIT, "XLA205") == src(
        """
        import torch.distributed as D
        import torch_xla.distributed.xla_backend

        D.init_process_group(backend='xla', world_size=n, init_method='xla://')
        """
    )


def test_nccl_backend_legacy_keeps_init_method_and_positional_form():
    code = """
    import torch.distributed as dist
    dist.init_process_group("nccl", init_method="env://")
    """
    legacy = fixed(code, "XLA205", target="legacy")
    assert 'dist.init_process_group("xla", init_method="env://")' in legacy
    assert "import torch_xla.distributed.xla_backend\n" in legacy
    # An explicit init_method is left alone on modern too.
    assert 'dist.init_process_group("xla", init_method="env://")' in fixed(code, "XLA205")


def test_ddp_wrapper_is_unwrapped_following_aliases():
    code = """
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(model, device_ids=[rank])
    net = nn.parallel.DistributedDataParallel(base, find_unused_parameters=True)
    """
    for target in ("modern", "legacy"):
        assert fixed(code, "XLA205", target=target) == src(
            """
            import torch.nn as nn
            from torch.nn.parallel import DistributedDataParallel as DDP

            net = base
            """
        )


def test_wrapper_module_in_use_gets_a_review_only_fix():
    code = """
    from torch.nn.parallel import DistributedDataParallel as DDP
    self.model = DDP(net)
    state = self.model.module.state_dict()
    """
    (f,) = findings(code, "XLA205")
    assert not f.fix.safe and "self.model.module" in f.manual
    # Fix-all leaves it alone; the quick fix rewrites both places.
    assert fixed(code, "XLA205") == src(code)
    assert fix_one(code, f) == src(
        """
        from torch.nn.parallel import DistributedDataParallel as DDP
        self.model = net
        state = self.model.state_dict()
        """
    )


def test_wrapper_module_read_of_the_same_binding_is_unwrapped_by_fix_all():
    code = """
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP


    def main(model):
        model = DDP(model, device_ids=[0])
        train(model)
        torch.save(model.module.state_dict(), "m.pt")
    """
    (f,) = findings(code, "XLA205")
    assert f.fix.safe and f.manual is None
    assert fixed(code, "XLA205") == src(
        """
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP


        def main(model):
            train(model)
            torch.save(model.state_dict(), "m.pt")
        """
    )


def test_wrapper_rebound_after_the_wrap_keeps_the_fix_review_only():
    code = """
    from torch.nn.parallel import DistributedDataParallel as DDP


    def main(model, other):
        model = DDP(model)
        model = other
        return model.module
    """
    (f,) = findings(code, "XLA205")
    assert not f.fix.safe


def test_no_sync_in_use_means_no_automatic_fix():
    code = """
    import torch
    model = torch.nn.parallel.DistributedDataParallel(model)
    with model.no_sync():
        pass
    """
    (f,) = findings(code, "XLA205")
    assert f.fix is None and "model.no_sync" in f.manual


def test_converted_code_reports_nothing():
    code = """
    import torch.distributed as dist
    import torch_xla.distributed.xla_backend
    dist.init_process_group("xla", init_method="xla://")
    dist.init_process_group(backend="gloo")
    model = model.to(device)
    """
    assert findings(code, "XLA205") == []
    assert findings(code, "XLA205", target="legacy") == []
