"""TRL's trainers, configs and TrlParser are Hugging Face Trainer scripts (guide section A):
SFTConfig & co. subclass TrainingArguments, SFTTrainer & co. subclass Trainer and TrlParser
subclasses HfArgumentParser, so XLA204/XLA301/XLA302 apply to them as to transformers' own."""

from __future__ import annotations

from tests.helpers import findings, fixed, src

PARSED = """
from dataclasses import dataclass
from trl import DPOConfig, DPOTrainer, TrlParser


@dataclass
class ScriptArgs:
    dataset: str = "prefs"


def run(script_args, cfg):
    DPOTrainer(model="m", args=cfg, train_dataset=None).train()


if __name__ == "__main__":
    p = TrlParser((ScriptArgs, DPOConfig))
    script_args, cfg = p.parse_args_and_config()
    run(script_args, cfg)
"""


def test_trl_parser_of_a_trl_config_reports_the_flags_to_pass():
    (f,) = findings(PARSED, "XLA301")
    assert f.fix is None and "--optim adamw_torch_xla" in f.manual
    assert "TrlParser" in PARSED.splitlines()[f.span.start.line + 1]
    # parse_args_and_config also reads a --config YAML file: the value can be set there too.
    assert "--config" in f.manual
    (g,) = findings(PARSED, "XLA302")
    assert g.fix is None and "--dataloader_num_workers N" in g.manual


def test_trl_trainer_script_needs_the_mp_fn_entry_point():
    assert findings(PARSED, "XLA204")


def test_hf_parser_of_a_trl_config_and_trl_trainer():
    code = """
    from transformers import HfArgumentParser
    from trl import KTOConfig, KTOTrainer

    def main(cfg):
        KTOTrainer(model="m", args=cfg).train()

    if __name__ == "__main__":
        (cfg,) = HfArgumentParser((KTOConfig,)).parse_args_into_dataclasses()
        main(cfg)
    """
    (f,) = findings(code, "XLA301")
    assert "--config" not in f.manual and "--optim adamw_torch_xla" in f.manual
    assert findings(code, "XLA302") and findings(code, "XLA204")


def test_trl_trainer_alone_is_a_trainer_script():
    code = """
    import trl

    def main(cfg):
        trl.trainer.GRPOTrainer(model="m", reward_funcs=[], args=cfg).train()
    """
    assert findings(code, "XLA204")


LITERAL = """
from trl import SFTConfig, SFTTrainer
cfg = SFTConfig(output_dir="out", max_length=512)
SFTTrainer(model="m", args=cfg, train_dataset=None).train()
"""


def test_literal_trl_config_is_fixed_on_the_call():
    (f,) = findings(LITERAL, "XLA301")
    assert f.fix.safe
    out = fixed(LITERAL, "XLA301")
    assert 'SFTConfig(output_dir="out", max_length=512, optim="adamw_torch_xla")' in out
    out = fixed(LITERAL, "XLA302")
    assert "dataloader_num_workers=4" in out


def test_every_trl_config_is_training_arguments():
    for name in ("ORPOConfig", "KTOConfig", "RewardConfig", "GRPOConfig", "CPOConfig"):
        code = f"from trl.trainer import {name}\nc = {name}(output_dir='o')\n"
        assert findings(code, "XLA301") and findings(code, "XLA302"), name


def test_local_subclass_of_a_trl_config():
    code = """
    from dataclasses import dataclass, field
    import trl

    @dataclass
    class MyConfig(trl.SFTConfig):
        optim: str = field(default="adamw_torch")
    """
    assert 'default="adamw_torch_xla"' in fixed(code, "XLA301")


def test_ppo_config_fix_is_for_review():
    # trl < 0.12's PPOConfig was a plain dataclass (no optim / dataloader_num_workers field):
    # a keyword added to it raises TypeError there.
    code = """
    from trl import PPOConfig
    cfg = PPOConfig(learning_rate=1e-5, batch_size=8)
    """
    for rule in ("XLA301", "XLA302"):
        (f,) = findings(code, rule)
        assert not f.fix.safe and "0.12" in f.fix.review_reason
        assert fixed(code, rule) == fixed(code, rule, unsafe=False)
        assert "PPOConfig(learning_rate=1e-5, batch_size=8)" in fixed(code, rule)


def test_unrelated_config_named_like_trl_is_quiet():
    code = """
    from mylib import SFTConfig
    cfg = SFTConfig(output_dir="out")
    """
    assert not findings(code, "XLA301") and not findings(code, "XLA302")


CONFIGS = """
from dataclasses import dataclass, field

import trl


@dataclass
class RecipeArguments(trl.ScriptArguments):
    chat_template: str | None = None


@dataclass
class SFTConfig(trl.SFTConfig):
    eval_every: int = field(default=100)
"""

RECIPE = """
from recipes import RecipeArguments, SFTConfig
from trl import ModelConfig, SFTTrainer, TrlParser


def main(recipe, training_args, model_args):
    SFTTrainer(model=model_args.model_name_or_path, args=training_args).train()


if __name__ == "__main__":
    parser = TrlParser((RecipeArguments, SFTConfig, ModelConfig))
    recipe, training_args, model_args = parser.parse_args_and_config()
    main(recipe, training_args, model_args)
"""


def _package_findings(tmp_path, configs: str, code: str) -> list:
    from xla_lens.engine import analyze

    package = tmp_path / "recipes"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "from .configs import RecipeArguments, SFTConfig\n", encoding="utf-8"
    )
    (package / "configs.py").write_text(src(configs), encoding="utf-8")
    script = tmp_path / "sft.py"
    script.write_text(src(RECIPE), encoding="utf-8")
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors, result.rule_errors
    return [f for f in result.findings if f.code == code]


def test_a_trl_config_subclassed_in_a_sibling_package_is_training_arguments(tmp_path):
    # ``from recipes import SFTConfig``: the package re-exports a subclass of trl's SFTConfig
    # (held-out 8 S2/S3: alignment-handbook's configs) — the values come from the parser.
    (f,) = _package_findings(tmp_path, CONFIGS, "XLA301")
    assert f.fix is None and "--optim adamw_torch_xla" in f.manual and "--config" in f.manual
    (g,) = _package_findings(tmp_path / "again", CONFIGS, "XLA302")
    assert g.fix is None and "--dataloader_num_workers N" in g.manual


def test_a_sibling_subclass_that_sets_the_field_owns_it(tmp_path):
    configs = CONFIGS.replace(
        "eval_every: int = field(default=100)",
        'eval_every: int = field(default=100)\n    optim: str = field(default="adamw_torch_xla")',
    )
    assert _package_findings(tmp_path, configs, "XLA301") == []
    assert len(_package_findings(tmp_path / "b", configs, "XLA302")) == 1
