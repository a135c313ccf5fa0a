"""XLA303 on TRL's SFTTrainer: its collator pads each batch to the longest sequence in it
(held-out 8 S4), so the finding advises pad_to_multiple_of=max_length; no fix (the value lives
in the recipe)."""

from __future__ import annotations

from xla_lens.rules.base import Severity

from tests.helpers import findings

PARSED = """
from trl import SFTConfig, SFTTrainer, TrlParser


def main(cfg):
    trainer = SFTTrainer(model="m", args=cfg, train_dataset=None)
    trainer.train()


if __name__ == "__main__":
    (cfg,) = TrlParser((SFTConfig,)).parse_args_and_config()
    main(cfg)
"""

LITERAL = """
from trl import SFTConfig, SFTTrainer

cfg = SFTConfig(output_dir="out", max_length=512OPTION)
SFTTrainer(model="m", args=cfg, train_dataset=None).train()
"""


def test_a_parsed_sft_config_gets_the_advice_on_the_trainer():
    (f,) = findings(PARSED, "XLA303")
    assert f.fix is None and f.severity == Severity.INFORMATION
    assert "SFTTrainer" in PARSED.splitlines()[f.span.start.line + 1]
    assert "pad_to_multiple_of to max_length" in f.manual and "--config" in f.manual


def test_a_literal_config_without_a_multiple_is_a_warning():
    (f,) = findings(LITERAL.replace("OPTION", ""), "XLA303")
    assert f.severity == Severity.WARNING and "in this SFTConfig call" in f.manual


def test_a_literal_config_with_a_multiple_is_quiet():
    assert findings(LITERAL.replace("OPTION", ", pad_to_multiple_of=512"), "XLA303") == []


def test_the_scripts_own_collator_is_left_to_the_collator_checks():
    code = LITERAL.replace("OPTION", "").replace(
        "train_dataset=None", "train_dataset=None, data_collator=collate"
    )
    assert findings(code, "XLA303") == []


def test_a_local_class_named_sft_trainer_is_not_trl():
    code = """
    class SFTTrainer:
        def __init__(self, model, args):
            self.model = model

    SFTTrainer(model="m", args=None)
    """
    assert findings(code, "XLA303") == []


def test_old_api_packing_on_the_trainer_gives_one_shape():
    # held-out 19 r6 (optimum-tpu's llama_tuning, an XLA control): TRL's old API packs with
    # ConstantLengthDataset, rows of exactly max_seq_length tokens.
    code = """
    from trl import SFTTrainer

    trainer = SFTTrainer(
        model=model,
        train_dataset=ds,
        dataset_text_field="prompt",
        max_seq_length=512,
        packing=True,
        args=training_args,
    )
    """
    assert findings(code, "XLA303") == []
    assert findings(code.replace("packing=True", "packing=False"), "XLA303") != []
