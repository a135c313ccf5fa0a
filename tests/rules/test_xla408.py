"""XLA408: a model with tied weights moved to the XLA device (held-out 50): the move copies
each module's parameters separately, so the fix re-ties them right after it."""

from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

TIED = src("""
import torch
import torch.nn as nn


class LM(nn.Module):
    def __init__(self, vocab=32, dim=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.embed.weight = self.head.weight


device = "cuda" if torch.cuda.is_available() else "cpu"
model = LM()
model.to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randint(0, 32, (4,), device=device)
    loss = model.head(model.embed(x)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
""")


def test_the_move_is_reported_and_the_fix_reties_right_after_it():
    (f,) = findings(TIED, "XLA408")
    assert f.span.start.line == TIED.splitlines().index("model.to(device)")
    assert "`embed.weight` is `head.weight`" in f.message
    assert f.fix is not None and f.fix.safe
    out = fixed(TIED, "XLA408")
    assert "model.to(device)\nmodel.embed.weight = model.head.weight\nopt = " in out
    assert findings(out, "XLA408") == []  # re-tied: nothing left, the fix is idempotent


def test_a_move_in_the_constructors_statement_reties_after_it():
    code = TIED.replace("model = LM()\nmodel.to(device)", "model = LM().to(device)")
    out = fixed(code, "XLA408")
    assert "model = LM().to(device)\nmodel.embed.weight = model.head.weight\n" in out


CONDITIONAL = TIED.replace(
    "        self.embed.weight = self.head.weight",
    "        if tie:\n            self.embed.weight = self.head.weight",
).replace("def __init__(self, vocab=32, dim=8):", "def __init__(self, vocab=32, dim=8, tie=True):")


def test_a_conditional_tie_is_remade_only_where_it_was_made():
    # word_language_model's ``if tie_weights:`` (held-out 169): an unconditional re-tie ties
    # the model its default options leave untied. Asked before the move, kept after it.
    (f,) = findings(CONDITIONAL, "XLA408")
    assert f.fix is not None and f.fix.safe
    out = fixed(CONDITIONAL, "XLA408")
    assert (
        "model_tied = model.embed.weight is model.head.weight\n"
        "model.to(device)\n"
        "if model_tied:\n    model.embed.weight = model.head.weight\n"
    ) in out
    assert findings(out, "XLA408") == []
    # Run on the CPU both ways: tied stays tied, untied stays untied.
    for tie in (True, False):
        scope: dict = {}
        exec(out.replace("tie=True", f"tie={tie}"), scope)
        shared = scope["model"].embed.weight is scope["model"].head.weight
        assert shared is tie


def test_a_conditional_tie_flag_name_does_not_shadow_the_scripts_names():
    code = CONDITIONAL.replace("model = LM()\n", "model_tied = 3\nmodel = LM()\n")
    out = fixed(code, "XLA408")
    assert "model_tied_ = model.embed.weight is model.head.weight\n" in out
    assert "model_tied = 3\n" in out


def test_a_conditional_tie_built_and_moved_in_one_statement_gets_no_fix():
    code = CONDITIONAL.replace("model = LM()\nmodel.to(device)", "model = LM().to(device)")
    (f,) = findings(code, "XLA408")
    assert f.fix is None
    assert "made only under a condition: no fix" in f.message


def test_a_move_inside_a_wrapper_gets_advice_only():
    code = TIED.replace("model.to(device)\n", "model = torch.nn.DataParallel(model.to(device))\n")
    (f,) = findings(code, "XLA408")
    assert f.fix is None and "model.embed.weight = model.head.weight" in f.manual


def test_a_model_rebound_to_its_wrapper_before_the_move_is_left_alone():
    code = TIED.replace(
        "model = LM()\nmodel.to(device)",
        "model = LM()\nmodel = torch.nn.DataParallel(model)\nmodel.to(device)",
    )
    assert findings(code, "XLA408") == []


def test_a_hugging_face_lm_head_is_retied_with_tie_weights():
    code = src("""
    import torch
    from transformers import AutoModelForCausalLM

    device = torch.device("cuda")
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for batch in range(3):
        loss = model(torch.zeros(1, 4, dtype=torch.long, device=device)).logits.sum()
        loss.backward()
        opt.step()
    """)
    (f,) = findings(code, "XLA408")
    assert f.fix is not None and f.fix.safe
    assert "model.to(device)\nmodel.tie_weights()\n" in fixed(code, "XLA408")


def test_a_classifier_head_is_not_reported():
    code = src("""
    import torch
    from transformers import AutoModelForSequenceClassification

    device = torch.device("cuda")
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for batch in range(3):
        model(torch.zeros(1, 4, dtype=torch.long, device=device)).logits.sum().backward()
        opt.step()
    """)
    assert findings(code, "XLA408") == []


def test_a_frozen_reference_model_and_an_evaluation_script_are_quiet():
    frozen = TIED.replace(
        "model.to(device)\n",
        "ref = LM()\nref.requires_grad_(False)\nref.to(device)\nmodel.to(device)\nmodel.embed.weight = model.head.weight\n",
    )
    assert findings(frozen, "XLA408") == []
    evaluation = src("""
    import torch
    from transformers import GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained("gpt2").to("cuda")
    model.eval()
    with torch.no_grad():
        print(model(torch.zeros(1, 4, dtype=torch.long, device="cuda")).logits.sum())
    """)
    assert findings(evaluation, "XLA408") == []


def test_an_already_xla_script_that_moves_a_tied_model_is_reported():
    code = TIED.replace(
        'device = "cuda" if torch.cuda.is_available() else "cpu"',
        "import torch_xla\n\ndevice = torch_xla.device()",
    )
    (f,) = findings(code, "XLA408")
    assert f.fix is not None and f.fix.safe


def test_a_script_that_stays_on_the_cpu_is_quiet():
    assert (
        findings(TIED.replace('"cuda" if torch.cuda.is_available() else "cpu"', '"cpu"'), "XLA408")
        == []
    )


def test_rule_metadata():
    rule = get_rule("XLA408")
    assert rule is not None and rule.has_fix and rule.category == "correctness"
    assert "re-ties them right after" in rule.doc


def test_a_class_that_reties_in_its_own_apply_is_left_alone():
    # llm67m's GPT (held-out 73's control) overrides `_apply` to restore the tie after a move.
    code = TIED.replace(
        "        self.embed.weight = self.head.weight\n",
        "        self.embed.weight = self.head.weight\n\n"
        "    def _apply(self, *args, **kwargs):\n"
        "        out = super()._apply(*args, **kwargs)\n"
        "        self.embed.weight = self.head.weight\n"
        "        return out\n",
    )
    assert findings(code, "XLA408") == []
