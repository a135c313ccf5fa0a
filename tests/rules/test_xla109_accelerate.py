"""XLA109 in accelerate form: an optimizer prepared (or built) before ``accelerator.prepare``
moves the model, in another ``prepare()`` call. accelerate re-maps an optimizer onto the
moved Parameters only inside one call, so on XLA it steps stale CPU tensors (verified with
accelerate 1.16 under PJRT CPU: the weight never changes)."""

from tests.helpers import findings, fix_one, fixed, src

SEPARATE = """
import torch
from accelerate import Accelerator

acc = Accelerator()
model = torch.nn.Linear(4, 1)
optimizer = acc.prepare(torch.optim.Adam(model.parameters(), lr=0.1))
model = acc.prepare(model)
"""


def test_optimizer_prepared_before_the_model_is_a_blocking_error_with_a_review_fix():
    (f,) = findings(SEPARATE, "XLA109")
    assert f.severity == 1 and f.span.start.line + 1 == 6
    assert "acc.prepare(model)" in f.message and "same `prepare()` call" in f.message
    assert not f.fix.safe and "wrap" in f.fix.review_reason
    assert "prepare(model, optimizer)" in f.manual
    assert fixed(SEPARATE, "XLA109") == src(SEPARATE)  # review only: never applied by `fix`
    out = fix_one(SEPARATE, f)
    assert out.index("model = acc.prepare(model)") < out.index("optimizer = acc.prepare(")


def test_optimizer_never_prepared_and_prepare_model_are_moves_too():
    code = """
    import torch
    from accelerate import Accelerator

    def main():
        accelerator = Accelerator()
        model = Net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model = accelerator.prepare_model(model)
    """
    (f,) = findings(code, "XLA109")
    assert "accelerator.prepare_model(model)" in f.message


def test_model_prepared_with_the_loader_has_no_fix_and_says_what_to_do():
    code = """
    import torch
    from accelerate import Accelerator

    def main(loader):
        accelerator = Accelerator()
        model = Net()
        optimizer = accelerator.prepare(torch.optim.AdamW(model.parameters()))
        model, loader = accelerator.prepare(model, loader)
    """
    (f,) = findings(code, "XLA109")
    assert f.fix is None
    assert "one call" in f.manual and "before building the optimizer" in f.manual


def test_helper_class_receiving_the_parameters_in_init_then_prepare_of_the_model():
    # meshgpt's trainers: an optimizer factory of another library, handed with the
    # accelerator to a wrapper that prepares it, then the model prepared with the loader.
    code = """
    import torch
    from accelerate import Accelerator
    from pytorch_custom_utils import OptimizerWithWarmupSchedule, get_adam_optimizer

    class Trainer(torch.nn.Module):
        def __init__(self, model, dataset, learning_rate=1e-4):
            super().__init__()
            self.accelerator = Accelerator()
            self.model = model
            self.optimizer = OptimizerWithWarmupSchedule(
                accelerator=self.accelerator,
                optimizer=get_adam_optimizer(model.parameters(), lr=learning_rate),
            )
            self.dataloader = torch.utils.data.DataLoader(dataset)
            (
                self.model,
                self.dataloader,
            ) = self.accelerator.prepare(self.model, self.dataloader)
    """
    (f,) = findings(code, "XLA109")
    assert f.span.start.line + 1 == 12  # the get_adam_optimizer(...) call
    assert "self.accelerator.prepare(self.model, self.dataloader)" in f.message
    assert f.fix is None and "one call" in f.manual


def test_build_in_init_and_a_separate_prepare_in_another_method():
    code = """
    import torch
    from accelerate import Accelerator

    class Trainer:
        def __init__(self, model):
            self.accelerator = Accelerator()
            self.model = model
            self.optimizer = torch.optim.AdamW(self.model.parameters())
            self.optimizer = self.accelerator.prepare(self.optimizer)

        def fit(self, loader):
            self.model = self.accelerator.prepare(self.model)
    """
    (f,) = findings(code, "XLA109")
    assert f.fix is None and "self.model" in f.manual


def test_accelerator_handed_in_is_recognised_by_its_name():
    code = """
    import torch
    import accelerate

    def train(accelerator, model, loader):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        optimizer = accelerator.prepare(optimizer)
        model, loader = accelerator.prepare(model, loader)
    """
    assert len(findings(code, "XLA109")) == 1


def test_prepared_in_one_call_or_after_the_model_is_fine():
    code = """
    import torch
    from accelerate import Accelerator
    from mylib import create_optimizer

    def together(loader):
        accelerator = Accelerator()
        model = Net()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
        model, optimizer, loader, scheduler = accelerator.prepare(
            model, optimizer, loader, scheduler
        )

    def factory_together(loader):
        accelerator = Accelerator()
        model = Net()
        opt = create_optimizer(model.parameters())
        model, opt = accelerator.prepare(model, opt)

    def after():
        accelerator = Accelerator()
        model = accelerator.prepare(Net())
        model = accelerator.prepare(model)
        optimizer = accelerator.prepare(torch.optim.Adam(model.parameters()))

    def moved_first():
        accelerator = Accelerator()
        model = Net()
        model.to(accelerator.device)
        optimizer = accelerator.prepare(torch.optim.Adam(model.parameters()))
        model = accelerator.prepare(model)

    def starred(objects):
        accelerator = Accelerator()
        model = Net()
        optimizer = torch.optim.Adam(model.parameters())
        model, *rest = accelerator.prepare(model, *objects)

    class T:
        def __init__(self, model):
            self.accelerator = Accelerator()
            self.model = model
            self.optimizer = torch.optim.AdamW(self.model.parameters())

        def fit(self):
            self.model, self.optimizer = self.accelerator.prepare(self.model, self.optimizer)
    """
    assert findings(code, "XLA109") == []


def test_no_move_when_the_accelerator_places_nothing_or_is_not_an_accelerator():
    code = """
    import torch
    from accelerate import Accelerator

    def cpu_only():
        acc = Accelerator(cpu=True)
        model = Net()
        optimizer = acc.prepare(torch.optim.Adam(model.parameters()))
        model = acc.prepare(model)

    def no_placement():
        acc = Accelerator(device_placement=False)
        model = Net()
        optimizer = acc.prepare(torch.optim.Adam(model.parameters()))
        model = acc.prepare(model)

    def per_call(acc2):
        acc2 = Accelerator()
        model = Net()
        optimizer = acc2.prepare(torch.optim.Adam(model.parameters()))
        model = acc2.prepare(model, device_placement=[False])

    def not_accelerate(builder):
        model = Net()
        optimizer = torch.optim.Adam(model.parameters())
        model = builder.prepare(model)
        norm = clip_grad_norm_(model.parameters(), 1.0)
    """
    assert findings(code, "XLA109") == []


def test_separate_prepare_in_the_branch_without_the_optimizer_is_not_reported():
    # accelerate's own test_sync: the optimizer exists, and is prepared with the model,
    # only when ``sched`` is set; the other branch prepares the model alone.
    code = """
    import torch
    from accelerate import Accelerator

    def setup(accelerator, sched=False):
        model = Net()
        if sched:
            opt = torch.optim.AdamW(params=model.parameters(), lr=1e-3)
        if sched:
            model, opt, loader = accelerator.prepare(model, opt, loader)
        else:
            model, loader = accelerator.prepare(model, loader)
    """
    assert findings(code, "XLA109") == []


def test_an_optimizer_factory_counts_only_against_accelerates_prepare():
    code = """
    import torch
    from accelerate import Accelerator

    def main(train_text_encoder):
        accelerator = Accelerator()
        optimizer_class = torch.optim.AdamW
        optimizer = optimizer_class(text_encoder.parameters())
        text_encoder.to(accelerator.device)
        unet, optimizer = accelerator.prepare(unet, optimizer)
    """
    assert findings(code, "XLA109") == []
