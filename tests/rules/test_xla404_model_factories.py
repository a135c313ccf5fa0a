"""XLA404, held-out 15 (SimCSE's Trainer copy): an object built by a model factory — HF's
``model_init(trial)``, or a method of the class that returns what one builds — is a module,
not a tensor: ``not self.engine`` reads no device value."""

from tests.helpers import findings, src

LOOP = src("""
import torch
import torch_xla
import torch_xla.core.xla_model as xm


class Loop:
    def __init__(self, model_init=None, use_engine=False):
        self.device = torch_xla.device()
        self.model_init = model_init
        self.use_engine = use_engine
        self.engine = None
        self.model = torch.nn.Linear(4, 1).to(self.device)

    def call_model_init(self, trial):
        return self.model_init(trial)

    def train(self, trial=None, steps=3):
        if self.model_init is not None:
            model = self.call_model_init(trial)
            model = model.to(self.device)
            self.model = model
            if self.use_engine:
                self.engine = model
        optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for _ in range(steps):
            loss = self.model(torch.ones(2, 4, device=self.device)).sum()
            loss.backward()
            if not self.engine:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            if loss > 100:
                print("diverging")
            xm.optimizer_step(optimizer)
            torch_xla.sync()
""")


def test_a_module_built_by_a_model_factory_is_no_tensor_test():
    (f,) = findings(LOOP, "XLA404")  # the loss test stays
    assert LOOP.splitlines()[f.span.start.line].strip() == "if loss > 100:"


def test_a_method_that_runs_the_model_still_gives_tensors():
    code = src("""
    import torch
    import torch_xla


    class Loop:
        def run_model(self, x):
            return self.model(x)

        def train(self, loader, optimizer):
            for x in loader:
                out = self.run_model(x.to(torch_xla.device()))
                if out.mean() > 0:
                    out = -out
                out.sum().backward()
                optimizer.step()
                torch_xla.sync()
    """)
    (f,) = findings(code, "XLA404")
    assert code.splitlines()[f.span.start.line].strip() == "if out.mean() > 0:"
