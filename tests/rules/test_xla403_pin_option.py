"""XLA403: ``DataLoader(pin_memory=args.pin_mem)`` where the option is True unless the user
turns it off (held-out 7, M4: MAE's ``--pin_mem`` / ``--no_pin_mem`` pair with
``set_defaults(pin_mem=True)``). Reported at the keyword; the removal of the keyword is for
review: the command-line option would no longer reach this loader."""

import pytest

from tests.helpers import findings, fixed, src

PAIR_WITH_SET_DEFAULTS = """
import argparse
import torch
from torch.utils.data import DataLoader


def get_parser():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--pin_mem", action="store_true", help="pin host memory")
    p.add_argument("--no_pin_mem", action="store_false", dest="pin_mem")
    p.set_defaults(pin_mem=True)
    return p


def main(args, ds):
    loader = DataLoader(ds, batch_size=args.batch, pin_memory=args.pin_mem, drop_last=True)
    return loader


if __name__ == "__main__":
    main(get_parser().parse_args(), None)
"""


def test_an_option_pair_defaulting_to_true_is_reported_with_a_fix_for_review():
    (f,) = findings(PAIR_WITH_SET_DEFAULTS, "XLA403")
    assert f.span.start.line == 15
    assert "args.pin_mem" in f.message and "--pin_mem" in f.message
    assert f.fix is not None and not f.fix.safe
    assert "--pin_mem" in f.fix.review_reason
    assert fixed(PAIR_WITH_SET_DEFAULTS, "XLA403") == src(PAIR_WITH_SET_DEFAULTS)
    out = fixed(PAIR_WITH_SET_DEFAULTS, "XLA403", unsafe=True)
    assert "DataLoader(ds, batch_size=args.batch, drop_last=True)" in out
    assert "p.set_defaults(pin_mem=True)" in out  # the option itself is left as it is


@pytest.mark.parametrize(
    "option",
    [
        'p.add_argument("--pin-memory", dest="pin_mem", type=bool, default=True)',
        'p.add_argument("--pin_mem", action="store_false")',
    ],
)
def test_other_spellings_of_a_true_default_are_reported(option: str):
    code = f"""
    import argparse
    from torch.utils.data import DataLoader
    p = argparse.ArgumentParser()
    {option}
    args = p.parse_args()
    loader = DataLoader(ds, pin_memory=args.pin_mem)
    """
    (f,) = findings(code, "XLA403")
    assert f.span.start.line == 5 and not f.fix.safe


def test_a_config_dict_value_that_is_true_is_reported():
    code = """
    from torch.utils.data import DataLoader
    cfg = {"batch_size": 4, "pin_memory": True}
    loader = DataLoader(ds, batch_size=cfg["batch_size"], pin_memory=cfg["pin_memory"])
    """
    (f,) = findings(code, "XLA403")
    assert f.span.start.line == 2 and "cfg" in f.message


@pytest.mark.parametrize(
    "setup, value",
    [
        ('p.add_argument("--pin_mem", action="store_true")', "args.pin_mem"),
        ('p.add_argument("--pin_mem", type=int, default=0)', "args.pin_mem"),
        ("use_cuda = torch.cuda.is_available()", "use_cuda"),
        ("", "torch.cuda.is_available()"),
        ("", "args.unknown"),
        (
            'p.add_argument("--pin_mem", action="store_true")\np.set_defaults(pin_mem=False)',
            "args.pin_mem",
        ),
    ],
)
def test_values_false_or_out_of_reach_on_xla_are_quiet(setup: str, value: str):
    code = (
        "import argparse\nimport torch\nfrom torch.utils.data import DataLoader\n"
        f"p = argparse.ArgumentParser()\n{setup}\nargs = p.parse_args()\n"
        f"loader = DataLoader(ds, pin_memory={value})\n"
    )
    assert findings(code, "XLA403") == []
