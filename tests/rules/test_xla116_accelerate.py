"""XLA116 in an accelerate script seeded with torch.manual_seed alone (held-out 45's
k-diffusion: ``torch.manual_seed(seeds[accelerator.process_index])``): accelerate seeds the XLA
device only in its own ``set_seed`` (accelerate/utils/random.py: ``xm.set_rng_state(seed)``),
so on XLA the device noise keeps the default seed. Reported without a fix; quiet once the
script uses ``set_seed``."""

from tests.helpers import findings, fixed, src

CODE = """
import accelerate
import torch


def main():
    accelerator = accelerate.Accelerator()
    seeds = torch.randint(0, 2**31, (accelerator.num_processes,), generator=torch.Generator().manual_seed(0))
    torch.manual_seed(int(seeds[accelerator.process_index]))
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = accelerator.prepare(model, opt)
    for _ in range(10):
        x = torch.randn(8, 4, device=accelerator.device)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        accelerator.backward(loss)
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_torch_seed_in_an_accelerate_script_is_reported_without_a_fix():
    (f,) = findings(CODE, "XLA116")
    assert "accelerate seeds it only in its own set_seed" in f.message
    assert f.fix is None
    assert "accelerate.utils.set_seed(int(seeds[accelerator.process_index]))" in f.manual
    assert fixed(CODE, "XLA116") == src(CODE)  # nothing to apply


def test_accelerates_own_set_seed_is_quiet():
    code = CODE.replace(
        "import torch\n", "import torch\nfrom accelerate.utils import set_seed\n", 1
    )
    code = code.replace(
        "    model = torch.nn.Linear(4, 1)\n",
        "    set_seed(0)\n    model = torch.nn.Linear(4, 1)\n",
    )
    assert findings(code, "XLA116") == []
