from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src


def test_unset_and_zero_workers_get_four_with_the_guides_bound():
    code = """
    from transformers import TrainingArguments as TA

    a = TA("out")
    b = TA("out", dataloader_num_workers=0)
    """
    found = findings(code, "XLA302")
    assert [f.span.start.line for f in found] == [2, 3]
    assert all("number of CPU cores" in f.message for f in found)
    assert "adjust" in found[0].fix.title
    expected = src(
        """
        from transformers import TrainingArguments as TA

        a = TA("out", dataloader_num_workers=4)
        b = TA("out", dataloader_num_workers=4)
        """
    )
    assert fixed(code, "XLA302") == expected
    assert fixed(code, "XLA302", target="legacy") == expected


def test_zero_finding_points_at_the_value():
    code = 'import transformers\na = transformers.Seq2SeqTrainingArguments("o", dataloader_num_workers=0)\n'
    (f,) = findings(code, "XLA302")
    line = code.splitlines()[1]
    assert line[f.span.start.col : f.span.end.col] == "0"


def test_converted_code_reports_nothing():
    code = """
    from transformers import TrainingArguments
    a = TrainingArguments("out", dataloader_num_workers=8)
    b = TrainingArguments("out", dataloader_num_workers=args.workers)
    c = TrainingArguments("out", **kwargs)
    d = SomethingElse(dataloader_num_workers=0)
    """
    assert findings(code, "XLA302") == []


def test_hover():
    assert "dataloader_num_workers" in get_rule("XLA302").hover["transformers.TrainingArguments"]
