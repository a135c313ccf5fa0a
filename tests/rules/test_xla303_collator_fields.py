"""XLA303, held-out 15 (SimCSE): a collator class of the script passes ``self.padding`` to
``tokenizer.pad``; its dataclass default True, kept by ``Collator(tokenizer)``, pads each
batch to its longest row. Reported with advice (no fix: the class is shared); a construction
that passes "max_length" is fine."""

from tests.helpers import findings, src

COLLATOR = src("""
from dataclasses import dataclass, field
from typing import Optional, Union
from transformers import AutoTokenizer, Trainer


@dataclass
class Collator:
    tokenizer: object
    padding: Union[bool, str] = True
    max_length: Optional[int] = None

    def __call__(self, features):
        return self.tokenizer.pad(features, padding=self.padding, max_length=self.max_length)


def main(model, args, ds):
    tok = AutoTokenizer.from_pretrained("some-model")
    Trainer(model=model, args=args, train_dataset=ds, data_collator=Collator(tok)).train()
""")


def test_a_dataclass_default_that_pads_to_the_longest_row_is_reported():
    (f,) = findings(COLLATOR, "XLA303")
    assert "Collator`'s default True" in f.message and "Collator(tok)" in f.message
    assert f.fix is None and f.manual is not None and 'padding="max_length"' in f.manual


def test_a_construction_with_a_fixed_length_is_fine():
    fixed_length = COLLATOR.replace(
        "Collator(tok)", 'Collator(tok, padding="max_length", max_length=128)'
    )
    assert findings(fixed_length, "XLA303") == []


def test_an_init_parameter_stored_in_the_attribute_counts_too():
    init_style = COLLATOR.replace(
        "@dataclass\nclass Collator:\n    tokenizer: object\n"
        "    padding: Union[bool, str] = True\n    max_length: Optional[int] = None\n",
        'class Collator:\n    def __init__(self, tokenizer, padding="longest", max_length=None):\n'
        "        self.tokenizer = tokenizer\n        self.padding = padding\n"
        "        self.max_length = max_length\n",
    )
    assert "def __init__" in init_style
    (f,) = findings(init_style, "XLA303")
    assert "'longest'" in f.message or '"longest"' in f.message
