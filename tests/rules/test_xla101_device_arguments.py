"""XLA101 at device arguments other than ``.to(...)``: a CUDA ``torch.Generator`` (XLA has
none: it becomes a CPU generator, which draws on the XLA device accept),
``torch.set_default_device("cuda")``, an integer rank handed to the script's own function as
its device, and device values passed to APIs that refuse the XLA device."""

from tests.helpers import findings, fixed

DRAW = """
import torch
gen = torch.Generator(device="cuda")
gen.manual_seed(0)
x = torch.randn(8, 4, device="cuda", generator=gen)
"""


def test_a_cuda_generator_becomes_a_cpu_generator_and_its_draw_moves_to_xla():
    gen, draw = findings(DRAW, "XLA101")
    assert "XLA has none" in gen.message and gen.fix.safe
    assert draw.fix.safe
    out = fixed(DRAW, "XLA101")
    assert 'gen = torch.Generator(device="cpu")\n' in out
    assert "x = torch.randn(8, 4, device=torch_xla.device(), generator=gen)\n" in out
    assert "Generator(device=torch_xla" not in out


def test_a_generator_placed_with_the_device_variable_follows_its_fix():
    text = """
    import torch
    device = torch.device("cuda")
    model = torch.nn.Linear(4, 2).to(device)
    g = torch.Generator(device=device).manual_seed(0)
    noise = torch.randn(3, 4, generator=g, device=device)
    """
    (f,) = findings(text, "XLA101")
    assert f.fix.safe
    out = fixed(text, "XLA101")
    assert "device = torch_xla.device()\n" in out
    assert 'g = torch.Generator(device="cpu").manual_seed(0)\n' in out


def test_a_generator_whose_device_is_read_waits_for_review():
    text = """
    import torch
    device = torch.device("cuda")
    g = torch.Generator(device=device)
    x = torch.randn(2, device=g.device, generator=g)
    """
    (f,) = findings(text, "XLA101")
    assert not f.fix.safe and "`.device`" in f.fix.review_reason
    assert "line 4" in f.fix.review_reason
    assert fixed(text, "XLA101") == fixed(text, "XLA101", unsafe=False)
    assert "torch_xla" not in fixed(text, "XLA101")


def test_a_generator_picker_becomes_the_cpu_not_the_xla_device():
    text = """
    import torch
    g = torch.Generator("cuda" if torch.cuda.is_available() else "cpu")
    """
    (f,) = findings(text, "XLA101")
    assert f.fix.safe
    assert 'g = torch.Generator("cpu")\n' in fixed(text, "XLA101")


def test_set_default_device_cuda_is_reported_and_fixed():
    text = """
    import torch
    torch.set_default_device("cuda")
    x = torch.zeros(3)
    """
    (f,) = findings(text, "XLA101")
    assert "set_default_device" in f.message and f.fix.safe
    assert "torch.set_default_device(torch_xla.device())\n" in fixed(text, "XLA101")


def test_set_default_device_uses_the_bound_device_variable():
    text = """
    import torch
    def main(local_rank):
        device = torch.device(f"cuda:{local_rank}")
        torch.set_default_device(f"cuda:{local_rank}")
        return torch.zeros(2).to(device)
    """
    out = fixed(text, "XLA101")
    assert "    torch.set_default_device(device)\n" in out
    assert "    device = torch_xla.device()\n" in out


INT_PARAM = """
import torch
import torch.distributed as dist
def evaluate(model, loader, device):
    return sum((model(x.to(device)).argmax(1) == y.to(device)).sum().item() for x, y in loader)
def main(rank, loader):
    dist.init_process_group("nccl")
    model = torch.nn.Linear(2, 2).to(rank)
    print(evaluate(model, loader, device=rank))
"""


def test_an_int_rank_passed_as_a_helper_device_is_reported_at_the_argument():
    fs = findings(INT_PARAM, "XLA101")
    arg = next(f for f in fs if "evaluate()" in f.message)
    assert arg.span.start.line + 1 == 8
    assert not arg.fix.safe and "no device variable" in arg.fix.review_reason
    out = fixed(INT_PARAM, "XLA101", unsafe=True)
    assert "evaluate(model, loader, device=torch_xla.device())" in out


def test_with_a_device_variable_bound_the_argument_fix_is_safe():
    text = """
    import torch
    def evaluate(model, batch, dev):
        return model(batch.to(dev))
    def main(local_rank):
        device = torch.device("cuda", local_rank)
        model = torch.nn.Linear(2, 2).to(device)
        return evaluate(model, torch.zeros(1, 2), local_rank)
    """
    fs = findings(text, "XLA101")
    arg = next(f for f in fs if "evaluate()" in f.message)
    assert arg.fix.safe
    assert "return evaluate(model, torch.zeros(1, 2), device)" in fixed(text, "XLA101")


def test_a_helper_that_needs_the_number_makes_the_argument_fix_review():
    text = """
    import torch
    def evaluate(model, batch, device):
        torch.cuda.set_device(device)
        return model(batch.to(device))
    def main(local_rank):
        device = torch.device("cuda", local_rank)
        return evaluate(torch.nn.Linear(2, 2).to(device), torch.zeros(1, 2), device=local_rank)
    """
    fs = findings(text, "XLA101")
    arg = next(f for f in fs if "evaluate()" in f.message)
    assert not arg.fix.safe and "torch.cuda.set_device" in arg.fix.review_reason


def test_a_rank_parameter_is_left_to_the_moves_inside_the_function():
    text = """
    import torch
    def train(rank, world_size):
        model = torch.nn.Linear(2, 2).to(rank)
    def main(rank):
        train(rank, 2)
    """
    fs = findings(text, "XLA101")
    assert [f.span.start.line + 1 for f in fs] == [3]


def test_a_device_passed_to_get_default_backend_for_device_makes_its_fix_review():
    text = """
    import torch
    def setup(rank):
        acc = torch.accelerator.current_accelerator()
        backend = torch.distributed.get_default_backend_for_device(acc)
        torch.distributed.init_process_group(backend=backend)
        return torch.nn.Linear(2, 2).to(acc)
    """
    (f,) = findings(text, "XLA101")
    assert not f.fix.safe
    assert "get_default_backend_for_device" in f.fix.review_reason and "line 4" in f.message
    assert "torch_xla" not in fixed(text, "XLA101")


def test_the_same_through_an_alias_of_torch_distributed():
    text = """
    import torch
    import torch.distributed as dist
    device = torch.device("cuda")
    backend = dist.get_default_backend_for_device(device)
    """
    (f,) = findings(text, "XLA101")
    assert not f.fix.safe and "get_default_backend_for_device" in f.fix.review_reason


def test_a_positional_device_variable_and_a_stored_generator_attribute():
    text = """
    import torch
    class Sampler:
        def __init__(self):
            self.device = torch.device("cuda")
            self.gen = torch.Generator(self.device)
        def draw(self):
            return torch.randn(2, device=self.device, generator=self.gen)
    """
    (f,) = findings(text, "XLA101")
    assert f.fix.safe
    assert 'self.gen = torch.Generator("cpu")\n' in fixed(text, "XLA101")


def test_a_stored_generator_whose_device_is_read_waits_for_review():
    text = """
    import torch
    class Sampler:
        def __init__(self):
            self.gen = torch.Generator(device="cuda")
        def draw(self):
            return torch.randn(2, device=self.gen.device, generator=self.gen)
    """
    (f,) = findings(text, "XLA101")
    assert not f.fix.safe and "line 6 `.device`" in f.fix.review_reason


def test_a_positional_rank_for_a_device_parameter_is_reported():
    text = """
    import torch
    def evaluate(model, batch, device):
        return model(batch.to(device))
    def main(local_rank, model, batch):
        return evaluate(model, batch, local_rank)
    """
    (f,) = findings(text, "XLA101")
    assert f.span.start.line + 1 == 5 and "evaluate()" in f.message and not f.fix.safe


def test_a_cuda_device_context_becomes_the_xla_device_context():
    text = """
    import torch
    with torch.device("cuda"):
        model = torch.nn.Linear(2, 2)
    """
    (f,) = findings(text, "XLA101")
    assert f.fix.safe
    assert "with torch_xla.device():\n" in fixed(text, "XLA101")


def test_a_generator_drawn_with_by_exponential_waits_for_review():
    # On an XLA tensor exponential_ & co. refuse any generator (torch's decomposition asserts
    # there is none): converted, that draw raises whatever the generator.
    text = """
    import torch
    g = torch.Generator(device="cuda")
    t = torch.empty(4, device="cuda").exponential_(generator=g)
    """
    gen = findings(text, "XLA101")[0]
    assert not gen.fix.safe and "`.exponential_`" in gen.fix.review_reason


def test_a_generator_on_a_device_taken_from_an_object_is_offered_for_review():
    text = """
    import torch
    from accelerate import Accelerator
    accelerator = Accelerator()
    device = accelerator.device
    def sample(pipeline):
        g = torch.Generator(device=pipeline.device).manual_seed(0)
        return pipeline(generator=g)
    noise_gen = torch.Generator(device)
    """
    fs = findings(text, "XLA101")
    assert [f.span.start.line + 1 for f in fs] == [6, 8]
    for f in fs:
        assert "raises when" in f.message and not f.fix.safe
        assert "also on a CUDA host" in f.fix.review_reason
    out = fixed(text, "XLA101", unsafe=True)
    assert 'torch.Generator(device="cpu").manual_seed(0)' in out
    assert 'noise_gen = torch.Generator("cpu")' in out


def test_a_cpu_generator_and_a_device_fix_covering_the_generator_are_not_reported_again():
    text = """
    import torch
    class Sampler:
        def __init__(self):
            self.device = torch.device("cuda")
            self.gen = torch.Generator(device=self.device)
            self.cpu_gen = torch.Generator(device="cpu")
    """
    (f,) = findings(text, "XLA101")
    assert f.span.start.line + 1 == 4


def test_a_process_index_handed_on_through_a_helper_that_builds_with_it():
    # held-out 27 (the annotated transformer): create_dataloaders(gpu, ...) hands `device` to
    # its collate function, which builds `torch.tensor([0], device=device)`.
    code = """
    import torch
    def collate_batch(batch, device):
        return torch.tensor([0], device=device)
    def create_dataloaders(device, data):
        def collate_fn(batch):
            return collate_batch(batch, device)
        return torch.utils.data.DataLoader(data, collate_fn=collate_fn)
    def train_worker(gpu, data):
        loader = create_dataloaders(gpu, data)
    """
    (f,) = [f for f in findings(code, "XLA101") if "create_dataloaders()" in f.message]
    assert "gpu is a CUDA device number" in f.message and f.span.start.line == 8


def test_a_generator_on_a_device_parameter_is_reported_for_review():
    # Held-out 61's ddpm-torch: Trainer.__init__(..., device) builds torch.Generator(device);
    # the converted caller hands it the XLA device, where the generator raises.
    code = """
    import torch
    class Trainer:
        def __init__(self, model, device, rank=0):
            self.generator = torch.Generator(device).manual_seed(8191 + rank)
    """
    (f,) = findings(code, "XLA101")
    assert "raises when device is the XLA device" in f.message
    assert not f.fix.safe and f.fix.ops[0].code == '"cpu"'
    rebound = code.replace("self.generator", "device = 'cpu'\n        self.generator")
    assert findings(rebound, "XLA101") == []


def test_a_boolean_option_named_for_the_gpu_is_not_a_device_number():
    # NER-BERT (held-out 122): ``--multi_gpu`` is ``action="store_true"``; the review fix put
    # torch_xla.device() (always true) in its place.
    code = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--multi_gpu", default=False, action="store_true")
    parser.add_argument("--gpu", type=int, default=0)
    args = parser.parse_args()
    params.multi_gpu = args.multi_gpu
    params.device_gpu = args.gpu
    """
    found = [f for f in findings(code, "XLA101") if "is a CUDA device number" in f.message]
    assert [f.span.start.line + 1 for f in found] == [8]
