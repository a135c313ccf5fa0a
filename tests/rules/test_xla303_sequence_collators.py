"""XLA303 on collate functions that pad with `pad_sequence`, and on per-string tokenizer calls
over a `Sequence[str]` (held-out 19 r1, stanford_alpaca: the collator's pad_sequence gave 12
uncached compiles in 8 steps on XLA; the per-string call pads nothing)."""

from xla_lens.rules.base import Severity

from tests.helpers import findings, fixed, src

ALPACA_LIKE = """
from dataclasses import dataclass
from typing import Sequence

import torch
from torch.nn.utils.rnn import pad_sequence
from transformers import Trainer

IGNORE = -100


def tokenize(strings: Sequence[str], tokenizer):
    out = [tokenizer(text, return_tensors="pt", padding="longest", truncation=True) for text in strings]
    input_ids = labels = [t.input_ids[0] for t in out]
    return input_ids, labels


@dataclass
class Collator:
    tokenizer: object

    def __call__(self, rows):
        ids = pad_sequence([r["input_ids"] for r in rows], batch_first=True, padding_value=0)
        labels = torch.nn.utils.rnn.pad_sequence([r["labels"] for r in rows], batch_first=True, padding_value=IGNORE)
        return dict(input_ids=ids, labels=labels)


def collate_pairs(batch):
    return pad_sequence([b[0] for b in batch])


def helper(rows):
    return pad_sequence(rows)


Trainer(model=None, data_collator=Collator(None))
"""


def test_pad_sequence_in_a_collate_function_is_reported_without_a_fix():
    found = [f for f in findings(ALPACA_LIKE, "XLA303") if "pad_sequence" in f.message]
    lines = [src(ALPACA_LIKE).splitlines()[f.span.start.line] for f in found]
    assert len(found) == 3 and "ids = pad_sequence" in lines[0] and "labels =" in lines[1]
    assert "Collator.__call__" in found[0].message and "collate_pairs" in found[2].message
    assert all(f.fix is None and "-100" in f.manual for f in found)
    # A helper that is no collate function is not taken.
    assert not any("helper" in f.message for f in found)


def test_one_string_per_call_over_a_sequence_of_str_pads_nothing_and_gets_no_fix():
    (f,) = [f for f in findings(ALPACA_LIKE, "XLA303") if "tokenizes one example" in f.message]
    assert f.fix is None and f.severity == Severity.INFORMATION
    assert fixed(ALPACA_LIKE, "XLA303", unsafe=True) == src(ALPACA_LIKE)


TEXT_MEL = """
import torch


class TextMelCollate:
    def __call__(self, batch):
        max_len = max([x.size(1) for x in batch])
        mels = torch.FloatTensor(len(batch), 80, max_len)
        mels.zero_()
        for i, x in enumerate(batch):
            mels[i, :, : x.size(1)] = x
        return mels


class FixedCollate:
    def __call__(self, batch):
        mels = torch.zeros(len(batch), 80, 1000)
        return mels
"""


def test_a_collate_function_sizing_the_batch_by_its_longest_row():
    # held-out 20 (tacotron2's TextMelCollate): a new length per batch.
    (f,) = findings(TEXT_MEL, "XLA303")
    assert "TextMelCollate.__call__" in f.message and f.fix is None
    assert "torch.FloatTensor(len(batch), 80, max_len)" in f.message


def test_a_python_list_padded_to_the_longest_row_in_a_collate_function():
    """LLMs-from-scratch's instruction collate (held-out 104): each item is padded as a list,
    ``item + [pad_id] * (longest - len(item))``, then made a tensor; the batch length is its
    longest row's, new almost every batch. ``F.pad`` to the longest row counts the same."""
    code = """
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader

    def custom_collate_fn(batch, pad_token_id=50256):
        batch_max_length = max(len(item) + 1 for item in batch)
        rows = []
        for item in batch:
            padded = item + [pad_token_id] * (batch_max_length - len(item))
            rows.append(torch.tensor(padded))
        return torch.stack(rows)

    def pad_collate(batch):
        longest = max(x.size(0) for x in batch)
        return torch.stack([F.pad(x, (0, longest - x.size(0))) for x in batch])

    loader = DataLoader(data, batch_size=8, collate_fn=custom_collate_fn)
    other = DataLoader(data, batch_size=8, collate_fn=pad_collate)
    """
    found = [f for f in findings(code, "XLA303") if "longest row" in f.message]
    assert [f.span.start.line for f in found] == [8, 14]
    assert "`[pad_token_id] * (batch_max_length - len(item))`" in found[0].message
