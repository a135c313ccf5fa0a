from tests.helpers import findings, fixed, src

CODE = """
import torch.utils.data as tud
from torch.utils.data.distributed import DistributedSampler as DS


def main():
    sampler = DS(train_ds)
    loader = tud.DataLoader(train_ds, batch_size=8, sampler=sampler, shuffle=True)


def _mp_fn(index):  # the XLA launcher starts it: the runtime numbers its processes
    main()
"""


def test_sampler_and_loader_fixed_modern():
    found = findings(CODE, "XLA203")
    assert [f.span.start.line for f in found] == [5, 6]
    assert fixed(CODE, "XLA203") == src(
        """
        import torch.utils.data as tud
        from torch.utils.data.distributed import DistributedSampler as DS
        import torch_xla.runtime as xr


        def main():
            sampler = DS(train_ds, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True)
            loader = tud.DataLoader(train_ds, batch_size=8, sampler=sampler, shuffle=False)


        def _mp_fn(index):  # the XLA launcher starts it: the runtime numbers its processes
            main()
        """
    )


def test_module_level_sampler_runtime_query_is_for_review():
    # Module-level code of a distributed script runs in a launcher's parent process, where a
    # runtime query would start the XLA runtime before the replicas: offered, never applied.
    code = """
    import torch.utils.data as tud
    from torch.utils.data.distributed import DistributedSampler as DS

    sampler = DS(train_ds)
    loader = tud.DataLoader(train_ds, batch_size=8, sampler=sampler, shuffle=True)


    def _mp_fn(index):
        pass
    """
    sampler, loader = findings(code, "XLA203")
    assert sampler.fix is not None and not sampler.fix.safe
    assert "launcher's parent process" in sampler.fix.review_reason
    assert loader.fix is not None and loader.fix.safe
    out = fixed(code, "XLA203")
    assert "sampler = DS(train_ds)\n" in out and "shuffle=False" in out
    assert "num_replicas=xr.world_size()" in fixed(code, "XLA203", unsafe=True)


def test_legacy_target_and_only_the_missing_keywords():
    code = """
    import torch


    def main():
        s = torch.utils.data.DistributedSampler(ds, rank=my_rank, shuffle=False)


    def _mp_fn(index):
        main()
    """
    out = fixed(code, "XLA203", target="legacy")
    assert (
        "DistributedSampler(ds, rank=my_rank, shuffle=False, num_replicas=xm.xrt_world_size())"
        in out
    )
    assert "import torch_xla.core.xla_model as xm\n" in out


def test_inline_sampler_call_in_loader():
    code = """
    from torch.utils.data import DataLoader, DistributedSampler
    loader = DataLoader(ds, sampler=DistributedSampler(ds, 4, 0), shuffle=True)
    """
    out = fixed(code, "XLA203")
    assert "DataLoader(ds, sampler=DistributedSampler(ds, 4, 0), shuffle=False)" in out


def test_converted_or_unrelated_code_reports_nothing():
    code = """
    from torch.utils.data import DataLoader, DistributedSampler, RandomSampler
    import torch_xla.runtime as xr
    s = DistributedSampler(ds, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True)
    a = DataLoader(ds, sampler=s, shuffle=False)
    b = DataLoader(ds, sampler=RandomSampler(ds), shuffle=True)
    c = DataLoader(ds, shuffle=True)
    d = DistributedSampler(ds, **sampler_kwargs)
    """
    assert findings(code, "XLA203") == []


def test_without_a_process_group_the_message_says_the_launcher_creates_none():
    (f,) = findings(CODE, "XLA203")[:1]
    assert "XLA launcher does not create one" in f.message
    assert "process group (line" not in f.message


def test_a_group_torchrun_numbers_before_the_sampler_leaves_it_alone():
    # multigpu / torchrun tutorials, XMem (held-out 47): the script builds its group from
    # torchrun's variables before the sampler. Converted, that group runs on the "xla" backend
    # with the same numbers (torchrun's, or the runtime's under torch_xla.launch with xla://),
    # so the sampler's defaults shard as before; the runtime's values would be wrong under
    # torchrun on PJRT CPU (world size 1 per process, measured): nothing to rewrite.
    code = """
    import torch.distributed as dist
    from torch.utils.data.distributed import DistributedSampler

    def main():
        dist.init_process_group(backend="nccl")
        sampler = DistributedSampler(ds)
    """
    assert findings(code, "XLA203") == []
    # The group's own rewrite is for review (a module with no launcher and no caller in
    # reach: under torchrun the "xla" group would not reduce on the PJRT CPU device).
    assert 'backend="nccl"' in fixed(code)
    out = fixed(code, "XLA205", unsafe=True)
    assert 'init_method="xla://"' in out and "xr.world_size()" not in out
    # Built after the sampler, or not at all before it: the usual finding.
    late = code.replace(
        '        dist.init_process_group(backend="nccl")\n        sampler = DistributedSampler(ds)',
        '        sampler = DistributedSampler(ds)\n        dist.init_process_group(backend="nccl")',
    )
    assert len(findings(late, "XLA203")) == 1


def test_group_given_its_size_says_num_replicas_now_comes_from_the_runtime():
    code = """
    import torch.distributed as dist
    from torch.utils.data.distributed import DistributedSampler

    def main(rank, world_size):
        dist.init_process_group("nccl", rank=rank, world_size=world_size)
        sampler = DistributedSampler(ds)
    """
    (f,) = findings(code, "XLA203")
    assert "num_replicas then comes from the XLA runtime" in f.message
    assert "world_size=world_size (line 5)" in f.message
    assert not f.fix.safe and "the process group at line 5" in f.fix.review_reason
    # The advice itself waits for torch_xla's launcher, as the review reason says (held-out
    # 31, KAIR: "pass the XLA ordinal" next to "the runtime gives every process ordinal 0").
    assert "once torch_xla's launcher starts the processes (XLA204), pass the XLA" in f.message
    assert "num_replicas=xr.world_size()" not in fixed(code)


def test_sampler_length_times_the_scripts_world_size_makes_the_fix_review():
    # imagenet: len(val_loader.sampler) * args.world_size assumes the sampler's replica count is
    # args.world_size (the size the group was given); the fix takes it from xr.world_size().
    code = """
    import torch.distributed as dist
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler

    def main_worker(args):
        dist.init_process_group(backend="nccl", init_method=args.dist_url,
                                world_size=args.world_size, rank=args.rank)
        val_sampler = DistributedSampler(val_ds, shuffle=False, drop_last=True)
        val_loader = DataLoader(val_ds, sampler=val_sampler)
        if len(val_loader.sampler) * args.world_size < len(val_loader.dataset):
            pass
    """
    (f,) = findings(code, "XLA203")
    assert not f.fix.safe
    assert "not from the process group's world_size=args.world_size (line 6)" in f.message
    assert "line 10 computes len(val_loader.sampler) * args.world_size" in f.message
    assert "needs review" in f.message
    assert fixed(code, "XLA203") == src(code)


def test_a_group_built_by_a_sibling_helper_is_named_in_the_message(tmp_path):
    # held-out 9 (LoRA's gpu.py builds the group): "the XLA launcher does not create one"
    # was a false premise there.
    from xla_lens.engine import analyze

    (tmp_path / "dist_helpers.py").write_text(
        'import torch.distributed as dist\n\n\ndef setup():\n    dist.init_process_group("nccl")\n',
        encoding="utf-8",
    )
    script = tmp_path / "train.py"
    script.write_text(
        "from torch.utils.data.distributed import DistributedSampler\n"
        "from dist_helpers import setup\n\n\ndef main(ds):\n    setup()\n"
        "    return DistributedSampler(ds)\n",
        encoding="utf-8",
    )
    result = analyze(script.read_text(), str(script))
    (f,) = [f for f in result.findings if f.code == "XLA203"]
    assert "the process group that setup() builds (dist_helpers.py:5)" in f.message
    assert "does not create one" not in f.message


def test_a_sampler_built_only_when_a_process_group_exists_takes_its_ranks_from_it():
    # held-out 22 r2 (hysts' dataloader.py): the sampler exists only with a group, so "the XLA
    # launcher creates no process group" does not apply; it takes its ranks from that group.
    code = """
    import torch
    import torch.distributed as dist
    def loaders(ds):
        if dist.is_available() and dist.is_initialized():
            sampler = torch.utils.data.distributed.DistributedSampler(ds)
        else:
            sampler = torch.utils.data.RandomSampler(ds)
        return torch.utils.data.DataLoader(ds, sampler=sampler, batch_size=4)
    """
    (f,) = findings(code, "XLA203")
    assert "needs a process group" not in f.message
    assert "built only when a process group exists (`dist.is_available() and" in f.message
    assert "line 4)" in f.message
    negated = code.replace("and dist.is_initialized()", "and not dist.is_initialized()")
    (g,) = findings(negated, "XLA203")
    assert "needs a process group" in g.message
