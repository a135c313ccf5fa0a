"""XLA303 on a tokenizer called with ONE example per call (a Dataset's ``__getitem__``, a
per-example ``Dataset.map`` function, ``encode_plus``): ``padding="longest"`` pads nothing
there, ``"max_length"`` pads every example, and labels copied from the ids then count pad
tokens in the loss. Such a fix is never safe; the advice points at the collator."""

from xla_lens.rules.base import Severity

from tests.helpers import findings, fixed, src

GETITEM = """
import torch
from transformers import AutoTokenizer


class PromptSet(torch.utils.data.Dataset):
    def __init__(self, rows):
        self.rows = rows
        self.tokenizer = AutoTokenizer.from_pretrained("gpt2")

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, idx):
        row = self.rows[idx]
        text = f"Q: {row['q']} A: {row['a']}"
        enc = self.tokenizer(
            text, padding="longest", max_length=512, truncation=True, return_tensors="pt"
        )
        input_ids = enc["input_ids"].squeeze(0)
        labels = input_ids.clone()
        return {"input_ids": input_ids, "labels": labels}
"""


def test_per_example_call_with_labels_from_the_ids_gets_advice_and_no_fix():
    # held-out 19 r1 (stanford_alpaca): the review fix padded one example to max_length and
    # put pad tokens into the labels copied from the ids (8 of 10 trained positions per row).
    (f,) = findings(GETITEM, "XLA303")
    assert f.fix is None and f.severity == Severity.INFORMATION
    assert "labels" in f.manual and "pad tokens" in f.manual and "-100" in f.manual
    assert "collator" in f.manual
    # The message does not claim this call gives each batch its own shape: the collator does.
    assert "collator" in f.message and "pad_to_multiple_of" in f.message
    assert fixed(GETITEM, "XLA303", unsafe=True) == src(GETITEM)


def test_per_example_call_without_labels_is_still_review():
    code = GETITEM.replace("        labels = input_ids.clone()\n", "").replace(
        ', "labels": labels', ""
    )
    (f,) = findings(code, "XLA303")
    assert not f.fix.safe
    assert "one example" in f.fix.review_reason
    assert "labels are derived" not in f.fix.review_reason
    assert fixed(code, "XLA303") == src(code)


def test_per_example_map_function_and_single_string_inputs():
    code = """
    from datasets import load_dataset
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")

    def tokenize(example):
        return tokenizer(example["text"], padding=True, max_length=128, truncation=True)

    def tokenize_batch(examples):
        return tokenizer(examples["text"], padding=True, max_length=128, truncation=True)

    ds = load_dataset("imdb")["train"]
    a = ds.map(tokenize)
    b = ds.map(tokenize_batch, batched=True)
    c = tokenizer("hello " + name, padding="longest", max_length=16, truncation=True)
    d = tokenizer.encode_plus(rows, padding=True, max_length=16, truncation=True)
    e = ds.map(lambda ex: tokenizer(ex["text"], padding=True, max_length=64, truncation=True))
    """
    found = findings(code, "XLA303")
    by_line = {f.span.start.line: f for f in found}
    assert sorted(by_line) == [6, 9, 14, 15, 16]
    assert by_line[9].fix.safe  # batched=True: a list per call, pads already exist
    for line in (6, 14, 15, 16):
        assert not by_line[line].fix.safe, line
        assert "one example" in by_line[line].fix.review_reason, line


def test_batched_call_with_labels_from_the_ids_is_review():
    code = """
    def collate(tokenizer, batch):
        texts = [b["text"] for b in batch]
        enc = tokenizer(texts, padding="longest", max_length=256, truncation=True, return_tensors="pt")
        enc["labels"] = enc["input_ids"].clone()
        return enc

    def collate_lm(tokenizer, texts, model):
        ids = tokenizer(texts, padding=True, max_length=64, truncation=True).input_ids
        return model(input_ids=ids, labels=ids)
    """
    found = findings(code, "XLA303")
    assert len(found) == 2
    for f in found:
        assert not f.fix.safe
        assert "labels" in f.fix.review_reason and "pad tokens" in f.fix.review_reason
        assert "-100" in f.fix.review_reason
        # Batched: no per-example advice.
        assert "one example" not in f.fix.review_reason


def test_labels_masked_at_the_pads_keep_the_batched_fix_safe():
    code = """
    def collate(tokenizer, batch):
        texts = [b["text"] for b in batch]
        enc = tokenizer(texts, padding="longest", max_length=256, truncation=True, return_tensors="pt")
        labels = enc["input_ids"].clone()
        labels[labels == tokenizer.pad_token_id] = -100
        enc["labels"] = labels
        return enc
    """
    (f,) = findings(code, "XLA303")
    assert f.fix.safe


def test_masking_only_the_prompt_does_not_mask_the_pads():
    code = """
    def collate(tokenizer, texts, n):
        enc = tokenizer(texts, padding=True, max_length=256, truncation=True, return_tensors="pt")
        labels = enc.input_ids.clone()
        labels[:, :n] = -100
        return enc, labels
    """
    (f,) = findings(code, "XLA303")
    assert not f.fix.safe and "pad tokens" in f.fix.review_reason


def test_annotated_str_parameter_is_one_example_and_a_loop_variable_is_no_evidence():
    code = """
    def encode_one(tokenizer, text: str):
        return tokenizer(text, padding=True, max_length=64, truncation=True)

    def encode_chunks(tokenizer, chunks):
        for texts in chunks:
            yield tokenizer(texts, padding=True, max_length=64, truncation=True)
    """
    one, chunk = findings(code, "XLA303")
    assert not one.fix.safe and "one example" in one.fix.review_reason
    assert chunk.fix.safe and "one example" not in chunk.message
