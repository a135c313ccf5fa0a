"""XLA402: DataLoaders drained with next() by a helper the training loop calls each step
(held-out 13, deep-text-recognition's per-source loaders concatenated per batch)."""

from tests.helpers import findings, fixed, src

PER_SOURCE = src("""
import torch
from torch.utils.data import DataLoader

class Mixer:
    def __init__(self, sets, sizes):
        self.loaders = [DataLoader(s, batch_size=b, shuffle=True) for s, b in zip(sets, sizes)]
        self.iters = [iter(loader) for loader in self.loaders]

    def next_batch(self):
        xs = []
        for i, it in enumerate(self.iters):
            try:
                x = next(it)
            except StopIteration:
                self.iters[i] = iter(self.loaders[i])
                x = next(self.iters[i])
            xs.append(x)
        return torch.cat(xs)

def main(sets, model, opt):
    mixer = Mixer(sets, [4, 4])
    for step in range(100):
        x = mixer.next_batch()
        loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
""")


def test_a_loader_drained_with_next_in_a_method_the_loop_calls_is_found():
    (f,) = findings(PER_SOURCE, "XLA402")
    assert "next()" in f.message and "drop_last=True" in f.message
    assert f.fix is not None and not f.fix.safe  # it drops samples: for review
    assert f.span.start.line == PER_SOURCE.splitlines().index(
        "        self.loaders = [DataLoader(s, batch_size=b, shuffle=True) for s, b in zip(sets, sizes)]"
    )
    out = fixed(PER_SOURCE, "XLA402", unsafe=True)
    assert "DataLoader(s, batch_size=b, shuffle=True, drop_last=True)" in out


def test_a_loader_sampled_once_before_training_is_left_alone():
    code = src("""
    import torch
    from torch.utils.data import DataLoader

    def main(data, model, opt):
        loader = DataLoader(data, batch_size=4)
        example = next(iter(loader))  # only to learn the input shape
        model.build(example.shape)
        for step in range(100):
            x = torch.randn(4, 8)
            loss = model(x).sum()
            loss.backward()
            opt.step()
    """)
    assert findings(code, "XLA402") == []


def test_a_cycled_loader_advanced_in_the_loop_is_found():
    code = src("""
    import itertools
    import torch
    from torch.utils.data import DataLoader

    def main(data, model, opt):
        batches = itertools.cycle(DataLoader(data, batch_size=4, drop_last=False))
        for step in range(1000):
            x = next(batches)
            loss = model(x).sum()
            loss.backward()
            opt.step()
    """)
    (f,) = findings(code, "XLA402")
    assert "next()" in f.message


def test_a_loader_whose_sampler_sets_the_epoch_length_is_left_alone():
    # minGPT: RandomSampler(replacement=True, num_samples=int(1e10)) never runs out.
    code = PER_SOURCE.replace(
        "DataLoader(s, batch_size=b, shuffle=True)",
        "DataLoader(s, batch_size=b, sampler=RandomSampler(s, replacement=True, num_samples=int(1e10)))",
    )
    assert findings(code, "XLA402") == []


INFINITE = src("""
import numpy as np
from torch.utils.data import DataLoader, Sampler

def endless(n):
    order = np.random.permutation(n)
    i = 0
    while True:
        yield order[i % n]
        i += 1

class EndlessSampler(Sampler):
    def __init__(self, data):
        self.n = len(data)
    def __iter__(self):
        return iter(endless(self.n))
    def __len__(self):
        return 2 ** 31

def main(dataset, model, opt):
    batches = iter(DataLoader(dataset, batch_size=8, sampler=EndlessSampler(dataset)))
    for step in range(100):
        x = next(batches)
        loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
""")


def test_a_loader_over_a_sampler_that_never_ends_has_no_last_batch(tmp_path):
    # Held-out 58's FastGAN: InfiniteSamplerWrapper (a generator looping while True, a length
    # of 2 ** 31), here in the script and in a module beside it.
    assert findings(INFINITE, "XLA402") == []
    for kept in ("__len__", "__iter__"):  # either one says so
        only = (
            INFINITE.replace("return 2 ** 31", "return self.n")
            if kept == "__iter__"
            else (INFINITE.replace("while True:", "for _ in range(n):"))
        )
        assert findings(only, "XLA402") == [], kept
    finite = INFINITE.replace("return 2 ** 31", "return self.n").replace(
        "while True:", "for _ in range(n):"
    )
    (f,) = findings(finite, "XLA402")
    assert "next()" in f.message
    head, _, tail = INFINITE.partition("def main(")
    (tmp_path / "operation.py").write_text(head)
    script = tmp_path / "train.py"
    script.write_text(
        "from operation import EndlessSampler\n" + head.split("\n")[1] + "\ndef main(" + tail
    )
    from xla_lens.engine import analyze

    result = analyze(script.read_text(), str(script))
    assert [f for f in result.findings if f.code == "XLA402"] == []
    (tmp_path / "operation.py").write_text(finite.partition("def main(")[0])
    from xla_lens.semantic import workspace_calls

    workspace_calls.clear_cache()
    result = analyze(script.read_text(), str(script))
    assert [f.code for f in result.findings if f.code == "XLA402"] == ["XLA402"]
