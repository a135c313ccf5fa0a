from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src


def test_training_loader_gets_drop_last_through_names_and_wrappers():
    code = """
    import torch
    from torch.utils.data import DataLoader as DL
    import torch_xla.distributed.parallel_loader as pl

    train_loader = DL(train_ds, batch_size=32, shuffle=True)
    eval_loader = DL(eval_ds, batch_size=32)
    device_loader = pl.MpDeviceLoader(train_loader, device)
    for step, batch in enumerate(device_loader):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
    for batch in eval_loader:
        model(**batch)
    """
    (f,) = findings(code, "XLA402")
    assert f.span.start.line == 4
    expected = src(code).replace(
        "DL(train_ds, batch_size=32, shuffle=True)",
        "DL(train_ds, batch_size=32, shuffle=True, drop_last=True)",
    )
    # Dropping the short batch changes which samples train: offered for review only.
    assert not f.fix.safe and "batch_size - 1" in f.fix.review_reason
    assert fixed(code, "XLA402") == src(code)
    assert fixed(code, "XLA402", unsafe=True) == expected
    assert fixed(code, "XLA402", target="legacy", unsafe=True) == expected


def test_drop_last_false_is_flipped_and_inline_loader_followed():
    code = """
    import torch
    for x, y in tqdm(torch.utils.data.DataLoader(ds, batch_size=8, drop_last=False)):
        criterion(model(x), y).backward()
        opt.step()
    """
    (f,) = findings(code, "XLA402")
    assert "drop_last=True)" in fixed(code, "XLA402", unsafe=True)
    assert "drop_last=False" not in fixed(code, "XLA402", unsafe=True)


def test_data_dependent_ops_in_the_loop_are_manual():
    code = """
    import torch

    for x, y in loader:
        idx = torch.nonzero(y)
        sel = x.masked_select(x > 0)
        labels = torch.unique(y)
        pos = x[y == 1]
        kept = x[attention_mask]
        x[pad_mask] = 0
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    """
    found = findings(code, "XLA402")
    # The assignment through a mask too: index_put through aten::nonzero (measured).
    assert [f.span.start.line for f in found] == [3, 4, 5, 6, 7, 8]
    assert all(f.fix is None and "torch.where" in f.manual for f in found)
    assert "masked_fill_" in found[-1].manual
    assert "torch.nonzero" in found[0].message


def test_static_shapes_and_code_outside_the_loop_report_nothing():
    code = """
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=16, drop_last=True)
    other = DataLoader(ds, batch_sampler=sampler)
    classes = torch.unique(all_labels)
    for x, y in loader:
        w = torch.where(y > 0, x, 0)
        first = x[0]
        tok = batch["attention_mask"]
        loss = criterion(model(x * (y > 0)), y)
        loss.backward()
        optimizer.step()
    for x in other:
        x[x > 0]
    """
    assert findings(code, "XLA402") == []


def test_hover():
    hover = get_rule("XLA402").hover
    assert "drop_last=True" in hover["torch.utils.data.DataLoader"]
    assert "torch.where" in hover["torch.nonzero"]


def test_a_random_crop_of_device_batches_is_reported_where_it_runs():
    # held-out 10 r3 (SRGAN): offsets drawn with random.randint each step; PJRT CPU: 6 steps
    # of a random crop compiled 6 graphs (a fixed crop: 1).
    code = """
    import random
    import torch

    def crop(x, size):
        top = random.randint(0, x.shape[-2] - size)
        left = random.randint(0, x.shape[-1] - size)
        return x[:, :, top:top + size, left:left + size]

    def train(model, batches, opt, device):
        for batch in batches:
            x = crop(batch.to(device), 32)
            loss = model(x).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """
    (f,) = [f for f in findings(code, "XLA402") if "offset" in f.message]
    assert "random.randint (line 5)" in f.message and "`crop`" in f.message
    assert f.fix is None and "on the host" in f.manual
    fixed_offsets = code.replace("top = random.randint(0, x.shape[-2] - size)", "top = 8")
    fixed_offsets = fixed_offsets.replace(
        "left = random.randint(0, x.shape[-1] - size)", "left = 8"
    )
    assert [f for f in findings(fixed_offsets, "XLA402") if "offset" in f.message] == []


def test_a_boolean_mask_assignment_in_the_loop_is_reported_with_masked_fill():
    # held-out 9 r6 (minGPT's top-k sampling); PJRT CPU, 6 steps: 6 aten::nonzero fallbacks
    # and 4 compiles, against 1 compile and none with masked_fill.
    code = """
    import torch

    def train(model, loader, opt, device):
        for x, y in loader:
            logits = model(x.to(device))
            v, _ = torch.topk(logits, 5)
            logits[logits < v[:, [-1]]] = -float("inf")
            loss = logits.logsumexp(-1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """
    (f,) = findings(code, "XLA402")
    assert "assigns through a boolean mask" in f.message and "masked_fill_" in f.manual


def test_a_random_crop_in_a_sibling_module_is_reported_at_its_call(tmp_path):
    # held-out 10 R9 (SRGAN's imgproc.random_crop_torch called from train_net.py's loop).
    from xla_lens.engine import analyze

    (tmp_path / "augment.py").write_text(
        src(
            """
            import random

            def crop_pair(a, b, size):
                top = random.randint(0, a.shape[-2] - size)
                left = random.randint(0, a.shape[-1] - size)
                return a[:, :, top:top + size, left:left + size], b[:, :, top:top + size, left:left + size]
            """
        ),
        encoding="utf-8",
    )
    script = tmp_path / "train.py"
    script.write_text(
        src(
            """
            import torch
            from augment import crop_pair

            def train(model, batches, opt, device):
                for x, y in batches:
                    x, y = crop_pair(x.to(device), y.to(device), 32)
                    loss = (model(x) - y).pow(2).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            """
        ),
        encoding="utf-8",
    )
    result = analyze(script.read_text(), str(script))
    (f,) = [f for f in result.findings if f.code == "XLA402"]
    assert "`crop_pair(...)`" in f.message and "augment.py:6" in f.message
    assert f.span.start.line == 5 and f.fix is None


def test_a_loader_whose_batch_is_replaced_before_use_needs_no_drop_last():
    # Held-out 13 (lit-llama finetune/lora.py): the loop's batch is rebound from get_batch()
    # on the body's first use, so the loader's short last batch never reaches the step.
    code = """
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(range(10), batch_size=4)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        if step > 3:
            break
        x, y = get_batch()
        loss = model(x).sum()
        loss.backward()
        opt.step()
    """
    assert [f for f in findings(code, "XLA402") if "drop_last" in f.message] == []
    used = code.replace("        x, y = get_batch()\n", "        x = x.float()\n")
    assert [f for f in findings(used, "XLA402") if "drop_last" in f.message]


KWARGS_LOADER = """
import torch

def main(ds, bs):
    kwargs = {"num_workers": 1, "pin_memory": True}
    loader = torch.utils.data.DataLoader(ds, batch_size=bs, shuffle=True, **kwargs)
    for x, y in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()
"""


def test_drop_last_beside_a_kwargs_dict_that_provably_lacks_it():
    # held-out 20 (WideResNet-pytorch): `**kwargs` of a literal dict without drop_last.
    (f,) = [f for f in findings(KWARGS_LOADER, "XLA402") if "drop_last" in f.message]
    assert not f.fix.safe
    out = fixed(KWARGS_LOADER, "XLA402", unsafe=True)
    assert "shuffle=True, **kwargs, drop_last=True)" in out


def test_a_kwargs_dict_that_may_carry_loader_keys_is_left_alone():
    for change in (
        ('{"num_workers": 1, "pin_memory": True}', '{"num_workers": 1, "drop_last": False}'),
        ("    loader = ", "    kwargs.update(extra)\n    loader = "),
        ("    loader = ", '    kwargs["drop_last"] = flag\n    loader = '),
        ('{"num_workers": 1, "pin_memory": True}', "dict(cfg)"),
    ):
        code = KWARGS_LOADER.replace(*change)
        assert [f for f in findings(code, "XLA402") if "drop_last" in f.message] == [], change


EVEN_BATCHES = """
import torch
import torch_xla
from torch.utils.data import DataLoader, TensorDataset


def train(model, opt, batch_size=32, num_batches=100):
    device = torch_xla.device()
    inputs = torch.randint(0, 1000, (num_batches * batch_size, 64))
    targets = torch.randint(0, 1000, (num_batches * batch_size, 64))
    loader = DataLoader(TensorDataset(inputs, targets), batch_size=batch_size, shuffle=True)
    for x, y in loader:
        loss = model(x.to(device)).float().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
"""


def test_a_dataset_built_as_a_multiple_of_the_batch_size_has_no_short_batch():
    # held-out 49's control: (num_batches * batch_size) rows loaded batch_size at a time.
    assert not [f for f in findings(EVEN_BATCHES, "XLA402") if "last batch" in f.message]
    odd = EVEN_BATCHES.replace("(num_batches * batch_size, 64)", "(num_batches * 3 + 1, 64)")
    assert [f for f in findings(odd, "XLA402") if "last batch" in f.message]
    literal = EVEN_BATCHES.replace("(num_batches * batch_size, 64)", "(1024, 64)").replace(
        "batch_size=batch_size, shuffle", "batch_size=32, shuffle"
    )
    assert not [f for f in findings(literal, "XLA402") if "last batch" in f.message]


def test_pyg_graph_batches_change_shape_every_step():
    """ogb's molecule property prediction (held-out 101): PyG's DataLoader joins each batch's
    graphs into one, whose node and edge counts change almost every step. Said per loader of
    a script that places its work on a device; a CPU-only script compiles nothing."""
    code = """
    import torch
    from torch_geometric.loader import DataLoader

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader = DataLoader(dataset[split["train"]], batch_size=32, shuffle=True)
    valid_loader = DataLoader(dataset[split["valid"]], batch_size=32)
    for batch in train_loader:
        loss = model(batch.to(device)).sum()
    """
    found = [f for f in findings(code, "XLA402") if "PyTorch Geometric" in f.message]
    assert [f.span.start.line for f in found] == [4, 5]
    assert "transforms.Pad" in found[0].manual
    on_cpu = code.replace(
        '    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n', ""
    ).replace("batch.to(device)", "batch")
    assert not [f for f in findings(on_cpu, "XLA402") if "PyTorch Geometric" in f.message]
