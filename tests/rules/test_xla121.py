"""XLA121: torch.inference_mode() → torch.no_grad()."""

import pytest

from tests.helpers import findings, fixed, src

CODE = "XLA121"


def test_context_manager_and_decorators_become_no_grad():
    text = src(
        """
        import torch

        @torch.inference_mode()
        def sample(model, n):
            return model(torch.randn(n, 4))

        @torch.inference_mode
        def score(model, x):
            return model(x)

        def validate(model, x):
            with torch.inference_mode(), torch.autocast("cpu"):
                return model(x)
        """
    )
    found = findings(text, CODE)
    assert [f.span.start.line for f in found] == [2, 6, 11]
    assert all(f.fix is not None and f.fix.safe for f in found)
    out = fixed(text, CODE)
    assert "inference_mode" not in out
    assert out.count("@torch.no_grad()") == 2
    assert "with torch.no_grad(), torch.autocast" in out


def test_an_imported_name_and_an_alias_are_followed():
    text = "import torch as T\nfrom torch import inference_mode\nwith inference_mode():\n    pass\nwith T.inference_mode(True):\n    pass\n"
    assert len(findings(text, CODE)) == 2
    out = fixed(text, CODE)
    assert out.count("T.no_grad()") == 2


@pytest.mark.parametrize("call", ["torch.inference_mode(False)", "torch.inference_mode(mode=flag)"])
def test_a_mode_that_may_be_off_is_left_alone(call: str):
    assert findings(f"import torch\nwith {call}:\n    pass\n", CODE) == []


@pytest.mark.parametrize("asks", ["torch.is_inference_mode_enabled()", "y.is_inference()"])
def test_code_that_asks_about_the_mode_gets_a_review_fix(asks: str):
    text = f"import torch\nwith torch.inference_mode():\n    y = torch.ones(2)\n    print({asks})\n"
    (f,) = findings(text, CODE)
    assert not f.fix.safe and "False under no_grad" in f.fix.review_reason
