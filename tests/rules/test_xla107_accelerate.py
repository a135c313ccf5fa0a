"""XLA107 and accelerate: a DataLoader that went through ``accelerator.prepare`` comes back on
XLA as an MpDeviceLoader, which marks the step at every fetch, so a loop that fetches from it
every iteration needs no sync of its own. Anything that is not provably such a loader keeps the
finding (and its sync)."""

from tests.helpers import findings, fixed, src

# A trainer class (the lucidrains-style shape): the loader is prepared onto ``self`` in
# ``__init__`` by tuple unpacking, and ``fit`` draws from a generator over it in a helper.
TRAINER = """
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def endless(loader):
    while True:
        for batch in loader:
            yield batch


class Trainer:
    def __init__(self, net, data, steps):
        self.accelerator = Accelerator()
        self.net = net
        self.opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
        self.loader = DataLoader(data, batch_size=16, shuffle=True, drop_last=True)
        (
            self.net,
            self.opt,
            self.loader,
        ) = self.accelerator.prepare(self.net, self.opt, self.loader)
        self.steps = steps

    def pull_inputs(self, batches):
        features, targets = next(batches)
        return {"x": features, "y": targets}

    def fit(self):
        batches = endless(self.loader)
        step = 0
        while step < self.steps:
            inputs = self.pull_inputs(batches)
            loss = torch.nn.functional.mse_loss(self.net(inputs["x"]), inputs["y"])
            self.accelerator.backward(loss)
            self.opt.step()
            self.opt.zero_grad()
            step += 1


Trainer(torch.nn.Linear(8, 1), TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), 10).fit()
"""

FOR_LOOP = TRAINER.replace(
    """        batches = endless(self.loader)
        step = 0
        while step < self.steps:
            inputs = self.pull_inputs(batches)
""",
    """        for features, targets in self.loader:
            inputs = {"x": features, "y": targets}
""",
).replace("            step += 1\n", "            print(f'loss {loss.item()}')\n")

LOCAL = """
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader


def endless(loader):
    while True:
        yield from loader


def main(model, dataset, steps):
    accelerator = Accelerator()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(dataset, batch_size=8)
    model, optimizer = accelerator.prepare(model, optimizer)
    loader = accelerator.prepare_data_loader(loader)
    batches = endless(loader)
    for step in range(steps):
        loss = model(next(batches)).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""


def test_a_trainer_whose_loader_is_prepared_in_init_needs_no_sync():
    assert not findings(TRAINER, "XLA107")
    assert fixed(TRAINER).count("torch_xla.sync()") == 0


def test_a_for_loop_over_the_prepared_attribute_needs_no_sync():
    assert not findings(FOR_LOOP, "XLA107")


def test_a_generator_over_a_prepared_local_loader_needs_no_sync():
    assert not findings(LOCAL, "XLA107")
    # Unpacking by position: the model's slot of the same call is not the loader.
    swapped = LOCAL.replace(
        "    model, optimizer = accelerator.prepare(model, optimizer)\n"
        "    loader = accelerator.prepare_data_loader(loader)\n",
        "    loader, model, optimizer = accelerator.prepare(model, optimizer, loader)\n",
    )
    assert len(findings(swapped, "XLA107")) == 1


def test_only_the_model_prepared_keeps_the_sync():
    code = TRAINER.replace(
        """        (
            self.net,
            self.opt,
            self.loader,
        ) = self.accelerator.prepare(self.net, self.opt, self.loader)""",
        "        self.net, self.opt = self.accelerator.prepare(self.net, self.opt)",
    )
    (f,) = findings(code, "XLA107")
    assert f.fix is not None and f.fix.safe
    assert "torch_xla.sync()" in fixed(code, "XLA107")


def test_a_loader_that_was_not_prepared_keeps_the_sync():
    # Another attribute is prepared; the loop draws from one that never was.
    code = TRAINER.replace(
        "batches = endless(self.loader)",
        "batches = endless(self.extra)",
    ).replace(
        "        self.steps = steps\n",
        "        self.steps = steps\n        self.extra = DataLoader(data, batch_size=4)\n",
    )
    assert len(findings(code, "XLA107")) == 1


def test_a_generator_handed_to_prepare_comes_back_as_is_and_keeps_the_sync():
    code = TRAINER.replace(
        "self.loader = DataLoader(data, batch_size=16, shuffle=True, drop_last=True)",
        "self.loader = endless(DataLoader(data, batch_size=16))",
    ).replace("batches = endless(self.loader)", "batches = self.loader")
    assert len(findings(code, "XLA107")) == 1


def test_itertools_cycle_replays_batches_without_fetching_so_it_keeps_the_sync():
    code = TRAINER.replace("batches = endless(self.loader)", "batches = cycle(self.loader)")
    code = code.replace("import torch\n", "import torch\nfrom itertools import cycle\n", 1)
    assert len(findings(code, "XLA107")) == 1


def test_a_fetch_that_some_iterations_skip_keeps_the_sync():
    code = TRAINER.replace(
        "            inputs = self.pull_inputs(batches)\n",
        "            if step % 2 == 0:\n                inputs = self.pull_inputs(batches)\n",
    )
    assert len(findings(code, "XLA107")) == 1


def test_an_attribute_rebound_elsewhere_is_not_proven_prepared():
    # A setter may hand the trainer a plain loader after __init__.
    setter = TRAINER.replace(
        "    def pull_inputs(self, batches):",
        "    def use_loader(self, loader):\n        self.loader = loader\n\n"
        "    def pull_inputs(self, batches):",
    )
    assert len(findings(setter, "XLA107")) == 1
    # A fresh DataLoader after the prepare, in the same method, replaces the prepared one.
    later = TRAINER.replace(
        "        self.steps = steps\n",
        "        self.steps = steps\n        self.loader = DataLoader(data, batch_size=4)\n",
    )
    assert len(findings(later, "XLA107")) == 1


def test_an_accelerator_on_the_cpu_wraps_nothing():
    code = TRAINER.replace("Accelerator()", "Accelerator(cpu=True)")
    assert len(findings(code, "XLA107")) == 1


def test_a_generator_that_yields_twice_per_fetch_keeps_the_sync():
    code = TRAINER.replace(
        "        for batch in loader:\n            yield batch\n",
        "        for batch in loader:\n            yield batch\n            yield batch\n",
    )
    assert len(findings(code, "XLA107")) == 1


def test_a_report_in_a_next_loop_waits_for_review_the_last_step_never_syncs():
    # The loader syncs when the next batch is fetched: a closure from the last step never runs.
    code = TRAINER.replace(
        "            step += 1\n",
        "            step += 1\n            print(f'loss {loss.item()}')\n",
    )
    (f,) = findings(code, "XLA401")
    assert f.fix is not None and not f.fix.safe
    assert "fetches the next batch from accelerate's prepared loader" in f.fix.review_reason
    assert "nothing syncs after the last step" in f.fix.review_reason
    assert fixed(code) == src(code)


def test_a_report_in_a_for_loop_over_the_prepared_loader_gets_a_safe_closure():
    # The MpDeviceLoader marks the step before each batch and after the last one.
    (f,) = findings(FOR_LOOP, "XLA401")
    assert f.fix is not None and f.fix.safe
    out = fixed(FOR_LOOP)
    assert "xm.add_step_closure(" in out and "torch_xla.sync()" not in out


METHOD_LOADER = """
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader


class Experiment:
    def __init__(self, data):
        self.accelerator = Accelerator()
        self.data = data

    def _get_dataloader(self, split):
        loader = DataLoader(self.data[split], batch_size=8, shuffle=split == "train")
        return loader

    def train(self, net):
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        train_loader = self._get_dataloader("train")
        net, opt, train_loader = self.accelerator.prepare(net, opt, train_loader)
        for x, y in train_loader:
            loss = torch.nn.functional.mse_loss(net(x), y)
            opt.zero_grad()
            self.accelerator.backward(loss)
            opt.step()
"""


def test_a_loader_a_method_builds_and_accelerate_prepares_needs_no_sync():
    # held-out 48's Omega-Net: `train_dataloader = self._get_dataloader("train")`, then prepared.
    assert findings(METHOD_LOADER, "XLA107") == []
    generator = METHOD_LOADER.replace(
        "        return loader\n", "        while True:\n            yield from loader\n"
    )
    assert len(findings(generator, "XLA107")) == 1
