"""XLA405 on FlashAttention-2 asked of transformers: loading the model raises ImportError on an
XLA host (no flash-attn there; measured with transformers 5.25). open-instruct's finetune.py
(held-out 39) turns it on by default through ``use_flash_attention_2=True if args.use_flash_attn
else False``."""

from tests.helpers import findings, fixed

CODE = """
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("m", {kw})
"""


def test_a_flash_attention_implementation_becomes_sdpa_for_review():
    code = CODE.replace("{kw}", 'attn_implementation="flash_attention_2"')
    (f,) = findings(code, "XLA405")
    assert "ImportError" in f.message and f.fix is not None and not f.fix.safe
    assert 'attn_implementation="sdpa"' in fixed(code, "XLA405", unsafe=True)


def test_a_run_time_flag_gets_advice_and_off_or_sdpa_nothing():
    flag = CODE.replace("{kw}", "use_flash_attention_2=True if args.use_flash_attn else False")
    (f,) = findings(flag, "XLA405")
    assert f.fix is None and "sdpa" in f.manual
    for kw in ("use_flash_attention_2=False", 'attn_implementation="sdpa"'):
        assert findings(CODE.replace("{kw}", kw), "XLA405") == []
