from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fix_one, fixed, src


def test_tokenizer_padding_longest_gets_fixed_length_defaults_as_reviewed_fix():
    code = """
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained("bert-base-uncased")
    enc = tok(texts, padding=True, return_tensors="pt")
    """
    (f,) = findings(code, "XLA303")
    assert f.span.start.line == 3
    # max_length is invented (128): the user must review it, so fix-all skips it.
    assert not f.fix.safe
    assert "128" in f.fix.title and "adjust" in f.fix.title
    assert fixed(code, "XLA303") == src(code)
    out = fix_one(code, f)
    assert (
        'tok(texts, padding="max_length", return_tensors="pt", max_length=128, truncation=True)'
        in out
    )
    assert findings(out, "XLA303") == []


def test_given_literal_max_length_with_truncation_makes_the_fix_safe_for_both_targets():
    code = """
    def enc(tokenizer, rows):
        return tokenizer.batch_encode_plus(rows, padding=True, max_length=64)

    def enc2(tokenizer, rows):
        return tokenizer(rows, padding="longest", max_length=32, truncation=True)
    """
    found = findings(code, "XLA303")
    assert [f.span.start.line for f in found] == [1, 4]
    assert all(f.fix.safe for f in found)
    expected = src(
        """
    def enc(tokenizer, rows):
        return tokenizer.batch_encode_plus(rows, padding="max_length", max_length=64, truncation=True)

    def enc2(tokenizer, rows):
        return tokenizer(rows, padding="max_length", max_length=32, truncation=True)
    """
    )
    assert fixed(code, "XLA303") == expected
    assert fixed(code, "XLA303", target="legacy") == expected


def test_padding_to_max_length_needs_review_where_it_could_fail_or_change_data():
    """Held-out trap: a computed max_length (None off XLA) or a call that never truncates
    turns "pad to the longest" into a failure on long sequences."""
    code = """
    from transformers import DataCollatorWithPadding

    def collate(tokenizer, batch, on_xla):
        return tokenizer.pad(batch, padding="longest", max_length=128 if on_xla else None)

    def enc(tokenizer, rows):
        return tokenizer(rows, padding="longest", max_length=256, truncation=False)

    c = DataCollatorWithPadding(tok, "longest", 64)
    """
    found = findings(code, "XLA303")
    assert len(found) == 3
    assert not any(f.fix.safe for f in found)
    reasons = [f.fix.review_reason for f in found]
    assert "computed" in reasons[0]
    assert "does not truncate" in reasons[1] and "does not truncate" in reasons[2]
    assert fixed(code, "XLA303") == src(code)


def test_collators_and_pad_default_to_longest():
    code = """
    import transformers
    from transformers import DataCollatorWithPadding as DCP

    c1 = DCP(tokenizer=tok)
    c2 = transformers.DataCollatorForSeq2Seq(tok, model, True, max_length=32)
    c3 = DCP(tok, "longest", 64)
    batch = tokenizer.pad(features, return_tensors="pt")
    """
    found = findings(code, "XLA303")
    assert [f.span.start.line for f in found] == [3, 4, 5, 6]
    c1, c2, c3, pad = found
    # Collators take no truncation argument: padding to max_length may fail on long inputs.
    assert not c2.fix.safe and not c3.fix.safe
    out = fix_one(code, c1)
    assert 'c1 = DCP(tokenizer=tok, padding="max_length", max_length=128)' in out
    # Positional padding is replaced in place (adding padding= would raise "multiple values").
    assert fixed(code, "XLA303", unsafe=True).splitlines()[4:6] == [
        'c2 = transformers.DataCollatorForSeq2Seq(tok, model, "max_length", max_length=32)',
        'c3 = DCP(tok, "max_length", 64)',
    ]
    assert 'padding="max_length", max_length=128)' in fix_one(code, pad)
    assert "truncation" not in fix_one(code, pad)


def test_static_padding_and_non_tokenizers_report_nothing():
    code = """
    from transformers import AutoTokenizer, DataCollatorWithPadding
    tok = AutoTokenizer.from_pretrained("bert")
    a = tok(texts, padding="max_length", max_length=128, truncation=True)
    b = tok(texts)
    c = DataCollatorWithPadding(tok, padding="max_length", max_length=128)
    d = tok.pad(features, padding="max_length", max_length=64)
    e = torch.nn.functional.pad(x, (0, 1))
    f = layer(x, padding=True)
    g = tok(texts, **opts)
    """
    assert findings(code, "XLA303") == []


def test_hover():
    assert (
        'padding="max_length"' in get_rule("XLA303").hover["transformers.DataCollatorWithPadding"]
    )


TRUNCATED_THEN_COLLATED = """
import transformers


def train(tokenizer, model, data, cutoff_len: int = 256):
    def tokenize(text):
        return tokenizer(text, truncation=True, max_length=cutoff_len, padding=False)

    data = data.map(lambda ex: tokenize(ex["text"]))
    return transformers.Trainer(
        model=model,
        train_dataset=data,
        data_collator=transformers.DataCollatorForSeq2Seq(
            tokenizer, pad_to_multiple_of=8, return_tensors="pt", padding=True
        ),
    )
"""


def test_collator_pads_to_the_tokenizers_truncation_length_not_a_guess():
    # Held-out 11 (alpaca-lora): max_length=128 under a 256 truncation made any batch with a
    # longer example raise "Unable to create tensor" (a collator does not truncate).
    (f,) = findings(TRUNCATED_THEN_COLLATED, "XLA303")
    assert f.fix is not None and not f.fix.safe
    assert "truncates to (line 6)" in f.fix.review_reason
    out = fixed(TRUNCATED_THEN_COLLATED, "XLA303", unsafe=True)
    assert 'padding="max_length", max_length=cutoff_len' in out and "128" not in out


def test_a_collator_guess_says_that_longer_examples_raise():
    code = """
    import transformers
    collator = transformers.DataCollatorWithPadding(tokenizer)
    """
    (f,) = findings(code, "XLA303")
    assert "128" in f.fix.review_reason and "raises" in f.fix.review_reason
