"""XLA403: ``pin_memory: True`` inside a keyword dict unpacked into a DataLoader."""

import torch

from tests.helpers import findings, fix_one, fixed, src

MNIST_STYLE = """
import torch


def main(args, dataset1, dataset2, use_accel):
    train_kwargs = {'batch_size': args.batch_size}
    test_kwargs = {'batch_size': args.test_batch_size}
    if use_accel:
        accel_kwargs = {'num_workers': 0,
                        'persistent_workers': False,
                        'pin_memory': True,  # for CUDA copies
                        'shuffle': True}
        train_kwargs.update(accel_kwargs)
        test_kwargs.update(accel_kwargs)
    train_loader = torch.utils.data.DataLoader(dataset1, **train_kwargs)
    test_loader = torch.utils.data.DataLoader(dataset2, **test_kwargs)
    return train_loader, test_loader
"""


def test_entry_merged_with_update_is_removed_by_a_safe_fix():
    (f,) = findings(MNIST_STYLE, "XLA403")  # two loaders, one entry: one finding
    assert f.span.start.line == 9
    assert "through `**accel_kwargs`" in f.message
    assert f.fix.safe
    # The entry's comment is kept, once, above the statement (a fix keeps the comments of
    # what it removes; the dict display has no line of its own for it).
    expected = (
        src(MNIST_STYLE)
        .replace("                        'pin_memory': True,  # for CUDA copies\n", "")
        .replace("    if use_accel:\n", "    if use_accel:\n        # for CUDA copies\n")
    )
    assert fixed(MNIST_STYLE, "XLA403") == expected
    assert fixed(MNIST_STYLE, "XLA403", target="legacy") == expected


def test_fixed_loaders_load_the_same_batches_without_pinning():
    """The fixed script runs: same batches, and no pinning asked for."""

    class Args:
        batch_size, test_batch_size = 4, 3

    ds = torch.utils.data.TensorDataset(torch.arange(10.0))
    namespace: dict = {}
    exec(compile(fixed(MNIST_STYLE, "XLA403"), "<fixed>", "exec"), namespace)
    train, test = namespace["main"](Args, ds, ds, True)
    assert not train.pin_memory and not test.pin_memory
    assert sorted(torch.cat([b[0] for b in train]).tolist()) == list(range(10))
    assert [len(b[0]) for b in test] == [3, 3, 3, 1]


def test_conditional_dict_call_and_update_forms():
    code = """
    import torch
    from torch.utils.data import DataLoader

    kwargs = {'num_workers': 1, 'pin_memory': True} if use_cuda else {}
    loader_args = dict(batch_size=8, pin_memory=True)
    extra = {'batch_size': 2}
    extra.update({'pin_memory': True})
    a = DataLoader(ds, shuffle=True, **kwargs)
    b = DataLoader(ds, **loader_args)
    c = DataLoader(ds, **extra)
    """
    found = findings(code, "XLA403")
    assert [f.span.start.line for f in found] == [3, 4, 6]
    assert all(f.fix.safe for f in found)
    assert fixed(code, "XLA403") == src(
        """
    import torch
    from torch.utils.data import DataLoader

    kwargs = {'num_workers': 1} if use_cuda else {}
    loader_args = dict(batch_size=8)
    extra = {'batch_size': 2}
    extra.update({})
    a = DataLoader(ds, shuffle=True, **kwargs)
    b = DataLoader(ds, **loader_args)
    c = DataLoader(ds, **extra)
    """
    )


def test_a_dict_used_for_more_than_loader_keywords_gets_a_review_fix():
    code = """
    import torch
    from torch.utils.data import DataLoader

    kw = {'num_workers': 1, 'pin_memory': True}
    dev_kw = {'pin_memory': True, 'pin_memory_device': 'cuda'}

    def build(ds):
        print("loader options", kw)
        return DataLoader(ds, **kw), DataLoader(ds, **dev_kw)
    """
    found = findings(code, "XLA403")
    assert [f.span.start.line for f in found] == [3, 4]
    assert not any(f.fix.safe for f in found)
    assert "used for more than DataLoader keywords" in found[0].fix.review_reason
    assert "pin_memory_device" in found[1].fix.review_reason
    assert fixed(code, "XLA403") == src(code)
    assert "kw = {'num_workers': 1}\n" in fix_one(code, found[0])


def test_dicts_that_do_not_pin_or_do_not_reach_a_loader_report_nothing():
    code = """
    import torch
    import torch_xla
    import torch_xla.distributed.parallel_loader as pl
    from torch.utils.data import DataLoader

    device = torch_xla.device()
    kw = {'num_workers': 4, 'pin_memory': False}
    opts = {'pin_memory': True}
    loader = pl.MpDeviceLoader(DataLoader(ds, batch_size=8, drop_last=True, **kw), device)
    other = make_loader(ds, **opts)
    """
    assert findings(code, "XLA403") == []
