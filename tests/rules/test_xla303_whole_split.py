"""XLA303 leaves a tokenizer call that pads a whole split at once, in a Dataset's
``__init__`` (held-out 179's ChemBERTa fine-tuning: ``self.encodings = tokenizer(
df["smiles"].tolist(), truncation=True, padding=True)``): every example of the split has the
split's one length, so no batch changes shape. The finding said "every batch gets a new shape",
and its review fix, ``max_length=128``, would have cut SMILES the tokenizer kept up to 512."""

from tests.helpers import findings, src

SPLIT = src("""
import torch
from transformers import AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("roberta-base")


class FinetuneDataset(BASE):
    def __init__(self, df):
        self.encodings = tokenizer(df["smiles"].tolist(), truncation=True, padding=True)
        self.labels = df["y"].values

    def __getitem__(self, idx):
        item = {k: torch.tensor(v[idx]) for k, v in self.encodings.items()}
        item["labels"] = torch.tensor(self.labels[idx])
        return item

    def __len__(self):
        return len(self.labels)


def collate(rows):
    return tokenizer([r["text"] for r in rows], truncation=True, padding=True)
""")


def test_a_whole_split_padded_once_in_a_dataset_init_is_left_alone():
    found = findings(SPLIT.replace("BASE", "torch.utils.data.Dataset"), "XLA303")
    # Only the per-batch collator is reported.
    assert [f.span.start.line + 1 for f in found] == [22]


def test_the_same_call_outside_a_dataset_is_still_reported():
    found = findings(SPLIT.replace("BASE", "object"), "XLA303")
    assert sorted(f.span.start.line + 1 for f in found) == [9, 22]
