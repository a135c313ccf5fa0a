"""XLA108 when the script resumes from its own checkpoint and uses an entry as it comes
(held-out 58's FastGAN: ``'g_ema': avg_param_G`` saved, ``avg_param_G = ckpt['g_ema']`` on
resume). torch.save's XLA tensors load back onto the XLA device, xm.save's onto the CPU
(measured on torch_xla 2.9), so the swap waits for review there."""

from tests.helpers import findings

SCRIPT = """
import torch

def train(G, D, opt, path, resume):
    avg = [p.detach().clone() for p in G.parameters()]
    if resume:
        ckpt = torch.load(resume{load_args})
        G.load_state_dict(ckpt["g"])
        opt.load_state_dict(ckpt["opt"])
        {read}
        start = ckpt["iteration"]
    for it in range(10):
        step(G, D, opt, avg)
    torch.save({{"g": G.state_dict(), "opt": opt.state_dict(), "g_ema": avg, "iteration": it}}, path)
"""


def _save(load_args: str = "", read: str = 'avg = ckpt["g_ema"]'):
    (f,) = findings(SCRIPT.format(load_args=load_args, read=read), "XLA108")
    return f


def test_an_entry_read_back_as_it_is_makes_the_swap_a_review():
    f = _save()
    assert not f.fix.safe
    assert "`g_ema` entry" in f.fix.review_reason and "onto the CPU" in f.fix.review_reason


def test_entries_through_load_state_dict_plain_values_or_a_mapped_load_stay_safe():
    assert _save(read="pass").fix.safe  # only state dicts and a counter read back
    assert _save(load_args=', map_location="cpu"').fix.safe  # CPU tensors either way
    assert _save(read='avg = ckpt.get("other")').fix.safe


def test_tensors_copied_by_a_function_of_the_script_count_and_numbers_do_not():
    helper = "from copy import deepcopy\n\ndef copy_params(m):\n    flat = deepcopy(list(p.data for p in m.parameters()))\n    return flat\n"
    through = helper + SCRIPT.replace(
        "avg = [p.detach().clone() for p in G.parameters()]", "avg = copy_params(G)"
    )
    (f,) = findings(through.format(load_args="", read='avg = ckpt["g_ema"]'), "XLA108")
    assert not f.fix.safe and "`g_ema` entry" in f.fix.review_reason
    numbers = SCRIPT.replace(
        "avg = [p.detach().clone() for p in G.parameters()]", "avg = 100.0 * 3 / 4"
    )
    (f,) = findings(numbers.format(load_args="", read='avg = ckpt["g_ema"]'), "XLA108")
    assert f.fix.safe
