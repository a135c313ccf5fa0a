from xla_lens.rules.base import Severity
from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src


def test_missing_optim_is_set_for_both_argument_classes():
    code = """
    import transformers
    from transformers import Seq2SeqTrainingArguments as S2S

    a = transformers.TrainingArguments("out", learning_rate=1e-4)
    b = S2S(output_dir="out")
    """
    found = findings(code, "XLA301")
    assert [f.span.start.line for f in found] == [3, 4]
    # transformers 4.54+ on torch 2.8+ defaults to adamw_torch_fused, which fails on XLA
    # parameters (measured): a warning on the modern target, advice on the legacy one.
    assert all(f.severity == Severity.WARNING for f in found)
    assert all("adamw_torch_fused" in f.message for f in found)
    legacy = findings(code, "XLA301", target="legacy")
    assert all(f.severity == Severity.INFORMATION for f in legacy)
    expected = src(
        """
        import transformers
        from transformers import Seq2SeqTrainingArguments as S2S

        a = transformers.TrainingArguments("out", learning_rate=1e-4, optim="adamw_torch_xla")
        b = S2S(output_dir="out", optim="adamw_torch_xla")
        """
    )
    assert fixed(code, "XLA301") == expected
    # No target-specific API: both targets write the same.
    assert fixed(code, "XLA301", target="legacy") == expected


def test_other_adamw_is_replaced_safely_multiline_layout_kept():
    code = """
    from transformers import TrainingArguments

    args = TrainingArguments(
        output_dir="out",
        optim="adamw_torch",
    )
    """
    (f,) = findings(code, "XLA301")
    assert f.fix is not None and f.fix.safe
    assert fixed(code, "XLA301") == src(
        """
        from transformers import TrainingArguments

        args = TrainingArguments(
            output_dir="out",
            optim="adamw_torch_xla",
        )
        """
    )


def test_a_different_optimizer_is_the_users_choice_and_gets_nothing():
    # held-out 19 r7 (optimum-tpu's llama_tuning, an XLA control): optim="adafactor" was
    # offered a swap to AdamW, on the premise of host syncs its step does not have.
    code = """
    from transformers import TrainingArguments
    a = TrainingArguments("out", optim="adafactor")
    b = TrainingArguments("out", optim="sgd")
    """
    assert findings(code, "XLA301") == []


def test_a_bitsandbytes_optimizer_does_not_run_on_xla_and_gets_a_review_fix():
    # The dev corpus's qlora: optim="paged_adamw_32bit" (CUDA kernels).
    code = """
    from transformers import TrainingArguments
    a = TrainingArguments("out", optim="paged_adamw_32bit")
    """
    (f,) = findings(code, "XLA301")
    assert not f.fix.safe and "bitsandbytes" in f.message
    assert fixed(code, "XLA301") == src(code)


def test_converted_and_unknowable_calls_report_nothing():
    code = """
    from transformers import TrainingArguments
    a = TrainingArguments("out", optim="adamw_torch_xla")
    b = TrainingArguments("out", optim=cli.optim)
    d = dict(optim="adamw_torch")
    """
    assert findings(code, "XLA301") == []


def test_arguments_from_a_dict_are_warned_about_without_a_fix():
    # ChatGLM3's finetune_hf.py (held-out 40): Seq2SeqTrainingArguments(**training_args) read
    # from a YAML config that sets no optim: the fused default fails on XLA.
    code = """
    from transformers import TrainingArguments
    c = TrainingArguments(**config)
    """
    (f,) = findings(code, "XLA301")
    assert f.severity == Severity.WARNING and f.fix is None
    assert f.message.startswith("unless the ** arguments set optim")
    assert findings(code, "XLA301", target="legacy") == []


def test_arguments_read_only_for_their_values_by_a_loop_of_its_own_are_quiet():
    # AMCLR's train2.py (held-out 40): HfArgumentParser fills TrainingArguments, but the script
    # steps its own torch.optim.AdamW over its own DataLoader and calls no Trainer.
    code = """
    import torch
    from transformers import HfArgumentParser, Trainer, TrainingArguments

    (args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()
    opt = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
    loader = torch.utils.data.DataLoader(data, batch_size=args.per_device_train_batch_size)
    """
    assert findings(code, "XLA301") == [] and findings(code, "XLA302") == []
    with_trainer = code + "Trainer(model=model, args=args).train()\n"
    assert findings(with_trainer, "XLA301") and findings(with_trainer, "XLA302")


def test_an_explicit_fused_adamw_fails_on_xla_and_is_a_warning():
    code = """
    from transformers import TrainingArguments
    a = TrainingArguments("out", optim="adamw_torch_fused")
    """
    (f,) = findings(code, "XLA301")
    assert f.severity == Severity.WARNING and f.fix.safe and "rejects XLA parameters" in f.message


def test_hover_covers_the_argument_classes():
    hover = get_rule("XLA301").hover
    assert "adamw_torch_xla" in hover["transformers.TrainingArguments"]
    assert "transformers.Seq2SeqTrainingArguments" in hover
    # Hovering the keyword itself shows the same text.
    assert (
        hover["transformers.TrainingArguments(optim=)"] == hover["transformers.TrainingArguments"]
    )


SUBCLASS = """
from dataclasses import dataclass, field
import transformers


@dataclass
class TrainingArguments(transformers.TrainingArguments):
    optim: str = field(default="adamw_torch")
    model_max_length: int = field(default=512)


def train():
    parser = transformers.HfArgumentParser((ModelArguments, TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()
"""


def test_subclass_default_is_changed_where_it_is_written():
    (f,) = findings(SUBCLASS, "XLA301")
    assert f.fix.safe and f.span.start.line == 6
    assert 'optim: str = field(default="adamw_torch_xla")' in fixed(SUBCLASS, "XLA301")


def test_parser_of_transformers_class_reports_the_flag_to_pass():
    code = """
    from transformers import HfArgumentParser, TrainingArguments
    parser = HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    """
    (f,) = findings(code, "XLA301")
    assert f.fix is None and "--optim adamw_torch_xla" in f.manual
    (g,) = findings(code, "XLA302")
    assert g.fix is None and "--dataloader_num_workers N" in g.manual


def test_parser_reading_a_json_file_says_to_set_the_value_in_that_file():
    # held-out 66's Firefly: every setting comes from a JSON file (its argparse, a parser of
    # the same name before, takes only --train_args_file and rejects --optim).
    code = """
    import argparse
    from transformers import HfArgumentParser, TrainingArguments
    parser = argparse.ArgumentParser()
    parser.add_argument("--train_args_file", type=str)
    args = parser.parse_args()
    parser = HfArgumentParser((CustomArguments, TrainingArguments))
    args, training_args = parser.parse_json_file(json_file=args.train_args_file)
    """
    (f,) = findings(code, "XLA301")
    assert "--optim" not in f.manual
    assert '`"optim": "adamw_torch_xla"` in the file `parser.parse_json_file` reads' in f.manual
    (g,) = findings(code, "XLA302")
    assert '`"dataloader_num_workers": N`' in g.manual and "--dataloader" not in g.manual


def test_parser_reading_the_command_line_or_a_json_file_names_both():
    # the transformers examples: a single .json argument is read as the file, else argv.
    code = """
    import sys
    from transformers import HfArgumentParser, TrainingArguments
    parser = HfArgumentParser((ModelArguments, TrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        model_args, training_args = parser.parse_json_file(json_file=sys.argv[1])
    else:
        model_args, training_args = parser.parse_args_into_dataclasses()
    """
    (f,) = findings(code, "XLA301")
    assert 'pass --optim adamw_torch_xla, or set `"optim": "adamw_torch_xla"`' in f.manual


def test_parsed_subclass_without_the_field_is_reported_on_the_parser():
    code = SUBCLASS.replace('    optim: str = field(default="adamw_torch")\n', "")
    (f,) = findings(code, "XLA301")
    assert f.fix is None and "`optim` field" in f.manual
    assert "HfArgumentParser" in src(code).splitlines()[f.span.start.line]


def test_literal_call_of_a_local_subclass_is_fixed_on_the_call():
    code = """
    import transformers
    class MyArgs(transformers.TrainingArguments):
        pass
    a = MyArgs("out")
    """
    assert 'MyArgs("out", optim="adamw_torch_xla")' in fixed(code, "XLA301")
