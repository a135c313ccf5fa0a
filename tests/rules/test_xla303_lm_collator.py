"""XLA303: ``DataCollatorForLanguageModeling`` (or a script's subclass of it) pads every batch
to its longest sequence, rounded up to ``pad_to_multiple_of`` (held-out 7, D4: dolly's
completion-only collator with ``pad_to_multiple_of=8`` fed to a Trainer). It has no ``padding``
option: reported with advice, no fix. The advice must not be "pad in the tokenizer" when the
script filters on the unpadded lengths (dolly drops rows with ``len(input_ids) >= max_length``:
padded to max_length, every row would go)."""

import pytest

from tests.helpers import findings, fixed, src

SUBCLASS_WITH_LENGTH_FILTER = """
from transformers import AutoTokenizer, DataCollatorForLanguageModeling, Trainer


class CompletionCollator(DataCollatorForLanguageModeling):
    def torch_call(self, examples):
        batch = super().torch_call(examples)
        batch["labels"][:, :2] = -100
        return batch


def build(model, ds, max_length):
    tok = AutoTokenizer.from_pretrained("gpt2")
    ds = ds.map(lambda b: tok(b["text"], max_length=max_length, truncation=True), batched=True)
    ds = ds.filter(lambda row: len(row["input_ids"]) < max_length)
    collator = CompletionCollator(tokenizer=tok, mlm=False, return_tensors="pt", pad_to_multiple_of=8)
    return Trainer(model=model, train_dataset=ds, data_collator=collator)
"""


def test_a_subclass_of_the_lm_collator_is_reported_with_advice_and_no_fix():
    (f,) = findings(SUBCLASS_WITH_LENGTH_FILTER, "XLA303")
    assert f.span.start.line == 14
    assert "longest" in f.message and "pad_to_multiple_of=8" in f.message
    assert f.fix is None
    assert "pad_to_multiple_of" in f.manual
    # The length filter at line 14 (1-based) is named: padding in the tokenizer would empty
    # the dataset.
    assert "line 14" in f.manual and "len(" in f.manual
    assert fixed(SUBCLASS_WITH_LENGTH_FILTER, unsafe=True).count("tok(b[") == 1
    assert 'padding="max_length"' not in fixed(SUBCLASS_WITH_LENGTH_FILTER, unsafe=True)


def test_the_library_collator_without_a_multiple_is_reported():
    code = """
    from transformers import DataCollatorForLanguageModeling
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    """
    (f,) = findings(code, "XLA303")
    assert f.span.start.line == 1 and f.fix is None
    assert "filter" not in f.manual


@pytest.mark.parametrize("multiple", ["max_length", "512", "args.max_seq_length"])
def test_a_multiple_that_may_be_the_full_length_is_quiet(multiple: str):
    code = f"""
    from transformers import DataCollatorForLanguageModeling
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=False, pad_to_multiple_of={multiple})
    """
    assert findings(code, "XLA303") == []


def test_other_classes_named_alike_are_quiet():
    code = """
    class DataCollatorForLanguageModeling:
        pass
    collator = DataCollatorForLanguageModeling()
    """
    assert findings(code, "XLA303") == []
    assert fixed(code) == src(code)


def test_the_advice_gives_one_shape_per_run():
    """What the advice claims, run with the library collator: pad_to_multiple_of=8 gives each
    batch its own length; pad_to_multiple_of=<the length sequences are cut to> gives one."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    vocab = {"[PAD]": 0, "[UNK]": 1, **{f"w{i}": i + 2 for i in range(30)}}
    raw = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    raw.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="[PAD]", unk_token="[UNK]"
    )
    rows = [tok(" ".join(f"w{i}" for i in range(n)))["input_ids"] for n in (3, 11, 20, 27)]
    batches = [[{"input_ids": r} for r in rows[i : i + 1]] for i in range(4)]

    def lengths(multiple: int) -> set[int]:
        c = transformers.DataCollatorForLanguageModeling(
            tok, mlm=False, pad_to_multiple_of=multiple
        )
        return {c(b)["input_ids"].shape[1] for b in batches}

    assert lengths(8) == {8, 16, 24, 32}
    assert lengths(32) == {32}
