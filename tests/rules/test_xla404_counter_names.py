"""XLA404: a loop over a *name* bound to ``range(...)`` (maybe wrapped in a progress bar or
``iter``) counts steps like an inline ``for i in range(n)``: its index is a Python int."""

import pytest

from tests.helpers import findings

BODY = """\
        i = it + offset
        if i > total:
            break
        x = torch.randn(2, 3, device=dev)
        loss = net(x).sum()
        loss.backward()
        opt.step()
        flag = i % 4 == 0
        if flag:
            count += 1
        if i % 5 == 0:
            count += 2
"""


def _script(head: str) -> str:
    return (
        "import torch\n\n"
        "def fit(total, offset, loader, dev):\n"
        "    count = 0\n"
        f"{head}"
        "    for it in steps:\n"
        f"{BODY}"
        "    return count\n"
    )


def lines(code: str) -> list[int]:
    return [f.span.start.line + 1 for f in findings(code, "XLA404")]


def test_a_name_bound_to_range_gives_int_indices():
    assert lines(_script("    steps = range(total)\n")) == []


def test_a_range_name_wrapped_in_a_progress_bar_or_iter_gives_int_indices():
    tqdm_head = (
        "    steps = range(total)\n"
        "    if is_main():\n"
        "        steps = tqdm(steps, initial=offset, dynamic_ncols=True)\n"
    )
    iter_head = "    steps = iter(range(total))\n"
    chained_head = "    counter = range(total)\n    steps = iter(counter)\n"
    trange_head = "    steps = trange(total)\n"
    assert lines(_script(tqdm_head)) == []
    assert lines(_script(iter_head)) == []
    assert lines(_script(chained_head)) == []
    assert lines(_script(trange_head)) == []


def test_a_name_bound_to_a_loader_or_tensor_still_yields_tensors():
    loader_head = "    steps = tqdm(loader)\n"
    tensor_head = "    steps = torch.arange(total, device=dev)\n"
    mixed_head = "    steps = range(total)\n    if offset:\n        steps = loader\n"
    assert lines(_script(loader_head)) == [8, 15, 17]
    assert lines(_script(tensor_head)) == [8, 15, 17]
    assert lines(_script(mixed_head)) == [10, 17, 19]


def test_a_range_name_rebound_by_a_for_target_is_not_trusted():
    # ``steps`` is also a loop target: its values there are unknown.
    head = "    steps = range(total)\n    for steps in loader:\n        pass\n"
    assert lines(_script(head)) == [10, 17, 19]


@pytest.mark.parametrize(
    "bar",
    ["trange(1, total + 1, desc='Training')", "tqdm(range(total))", "tqdm(range(total), ncols=0)"],
)
def test_a_progress_bar_entered_as_a_context_yields_its_counter(bar: str):
    # pytorch-gan-collections' ``with trange(...) as pbar: for step in pbar:`` (held-out 46).
    code = f"""
    import torch
    from tqdm import tqdm, trange

    def train(net, opt, loader, total, writer):
        with {bar} as pbar:
            for step in pbar:
                x = next(loader).to("cuda")
                loss = net(x).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step == 1 or step % 500 == 0:
                    writer.add_scalar("step", step, step)
                    print("%d.png" % step)
    """
    assert findings(code, "XLA404") == []
    assert [f for f in findings(code, "XLA401") if "step" in f.message] == []


def test_a_bar_over_a_loader_still_yields_batches():
    code = """
    import torch
    from tqdm import tqdm

    def train(net, opt, loader):
        with tqdm(loader) as pbar:
            for x in pbar:
                loss = net(x.to("cuda")).mean()
                loss.backward()
                opt.step()
                if x.sum() > 0:
                    print("positive")
    """
    assert findings(code, "XLA404")
