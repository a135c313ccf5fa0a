"""XLA205 follows ``backend=cfg.attr`` to an attribute the script sets itself (held-out p1:
the finding vanished once another fix imported torch_xla while the backend stayed NCCL)."""

from tests.helpers import findings, fixed, src

SETUP = """
import os
import torch
import torch.distributed as dist

def start_group(cfg):
    cfg.rank = int(os.environ["RANK"])
    cfg.backend_name = "nccl"
    print("rank {} of {}".format(cfg.rank, cfg.world), flush=True)
    dist.init_process_group(backend=cfg.backend_name, init_method="env://", rank=cfg.rank)

def total(x):
    t = torch.tensor([x], device=DEVICE)
    dist.all_reduce(t)
    return t
"""


def test_attribute_set_just_above_the_call_is_followed_and_fixed_at_the_call():
    note, f = findings(SETUP, "XLA205")
    assert note.fix is None and note.span.start.line == 6  # 0-based
    # A module of helpers with no caller in reach: the backend's rewrite is for review.
    assert not f.fix.safe and "no caller of `start_group`" in f.fix.review_reason
    out = fixed(SETUP, "XLA205", unsafe=True)
    assert 'dist.init_process_group(backend="xla", init_method="xla://", rank=cfg.rank)' in out
    # Whatever else reads the attribute still sees what the original set.
    assert 'cfg.backend_name = "nccl"' in out
    assert "import torch_xla.distributed.xla_backend" in out


def test_still_reported_after_another_fix_imported_torch_xla():
    converted = SETUP.replace("import torch\n", "import torch\nimport torch_xla\n").replace(
        "DEVICE", "torch_xla.device()"
    )
    f = findings(converted, "XLA205")[-1]
    assert f.fix is not None
    assert 'backend="xla"' in fixed(converted, "XLA205", unsafe=True)


def test_a_call_or_branch_between_the_store_and_the_call_stops_the_follow():
    between = SETUP.replace('    print("rank', '    prepare(cfg)\n    print("rank')
    f = findings(between, "XLA205")[-1]
    # prepare(cfg) may set the attribute: the store is only one of the values it can have.
    assert f.fix is None or not f.fix.safe
    looped = """
    import torch.distributed as dist
    def start(cfg):
        for name in ("gloo", "nccl"):
            dist.init_process_group(backend=cfg.b)
            cfg.b = name
    """
    (f,) = findings(looped, "XLA205")
    assert f.fix is None or not f.fix.safe


def test_a_store_overrides_the_argparse_default():
    code = """
    import argparse
    import torch.distributed as dist
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist_backend", default="gloo")
    args = parser.parse_args()
    args.dist_backend = "nccl"
    dist.init_process_group(backend=args.dist_backend)
    """
    f = findings(code, "XLA205")[-1]
    assert f.fix.safe
    assert 'dist.init_process_group(backend="xla", init_method="xla://")' in fixed(code, "XLA205")
    gloo = code.replace('args.dist_backend = "nccl"', 'args.dist_backend = "gloo"').replace(
        'default="gloo"', 'default="nccl"'
    )
    assert findings(gloo, "XLA205") == []


def test_a_helper_that_sets_the_attribute_before_the_call_is_a_source_for_review():
    code = """
    import torch
    import torch_xla
    import torch.distributed as dist

    def configure(args):
        args.dist_backend = "nccl"

    def main(args):
        configure(args)
        dist.init_process_group(backend=args.dist_backend)
        return torch.zeros(1, device=torch_xla.device())
    """
    note, f = findings(code, "XLA205")
    assert note.span.start.line == 5  # 0-based: the helper's store
    assert not f.fix.safe
    assert fixed(code, "XLA205") == src(code)


def test_argparse_default_also_set_by_a_helper_is_review_only():
    code = """
    import argparse
    import torch.distributed as dist
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist_backend", default="nccl")

    def force_gloo(a):
        a.dist_backend = "gloo"

    args = parser.parse_args()
    if args.cpu:
        force_gloo(args)
    dist.init_process_group(backend=args.dist_backend)
    """
    f = findings(code, "XLA205")[-1]
    assert not f.fix.safe and "also set on line 7" in f.fix.review_reason


def test_an_xla_script_computing_its_backend_is_left_alone():
    code = """
    import torch_xla
    import torch.distributed as dist
    def setup(args):
        dist.init_process_group(backend=args.dist_backend, rank=0)
        return torch_xla.device()
    """
    assert findings(code, "XLA205") == []
    # Unless the script itself sets the attribute to NCCL.
    nccl = code.replace("dist.init", 'args.dist_backend = "nccl"; dist.init')
    assert fixed(nccl, "XLA205", unsafe=True).count('backend="xla"') == 1


def test_a_try_body_or_another_argument_between_stops_the_follow():
    tried = """
    import torch.distributed as dist
    def start(cfg):
        cfg.b = "nccl"
        try:
            cfg.b = pick()
        except ValueError:
            pass
        else:
            dist.init_process_group(backend=cfg.b)
    """
    assert all(f.fix is None or not f.fix.safe for f in findings(tried, "XLA205"))
    argument = """
    import torch.distributed as dist
    def start(cfg):
        cfg.b = "nccl"
        dist.init_process_group(rank=reset(cfg), backend=cfg.b)
    """
    assert all(f.fix is None or not f.fix.safe for f in findings(argument, "XLA205"))
