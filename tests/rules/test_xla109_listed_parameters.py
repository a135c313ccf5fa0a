"""XLA109 when the optimizer's Parameters are taken into a list before the move and the
optimizer is built after it (held-out 43, AnimateDiff: ``trainable_params =
list(filter(lambda p: p.requires_grad, unet.parameters()))``, then the move would go between
the list and ``AdamW(trainable_params)``). On XLA the list keeps the old Parameters; a
generator (``params = model.parameters()``) is read only when the optimizer iterates it."""

from tests.helpers import findings, fixed

LISTED = """
import torch
import torch.nn as nn


def main():
    model = nn.Linear(4, 2)
    trainable = list(filter(lambda p: p.requires_grad, model.parameters()))
    model.to("cuda")
    optimizer = torch.optim.AdamW(trainable, lr=1e-3)
    return optimizer
"""


def test_a_list_of_parameters_taken_before_the_move_is_stale():
    (f,) = findings(LISTED, "XLA109")
    assert "taken on line 7" in f.message
    assert f.fix is not None and f.fix.safe
    out = fixed(LISTED, "XLA109")
    assert out.index('model.to("cuda")') < out.index("trainable = list(")


def test_the_move_goes_before_the_first_read_of_the_parameters():
    # Held-out 43: the optimizer was built right after the list; the move went between them.
    code = LISTED.replace(
        '    model.to("cuda")\n    optimizer = torch.optim.AdamW(trainable, lr=1e-3)\n',
        '    optimizer = torch.optim.AdamW(trainable, lr=1e-3)\n    model.to("cuda")\n',
    )
    out = fixed(code, "XLA109")
    assert out.index('model.to("cuda")') < out.index("trainable = list(")


def test_a_generator_of_parameters_is_read_after_the_move():
    code = LISTED.replace(
        "list(filter(lambda p: p.requires_grad, model.parameters()))", "model.parameters()"
    )
    assert findings(code, "XLA109") == []


def test_parameters_taken_through_a_second_name_move_the_model_above_both():
    code = """
    import torch
    import torch.nn as nn


    def main():
        model = nn.Linear(4, 2)
        decay = [p for n, p in model.named_parameters() if "bias" not in n]
        rest = [p for n, p in model.named_parameters() if "bias" in n]
        groups = [{"params": decay, "weight_decay": 0.01}, {"params": rest}]
        optimizer = torch.optim.AdamW(groups, lr=1e-3)
        model.to("cuda")
        return optimizer
    """
    (f,) = findings(code, "XLA109")
    assert f.fix is not None and f.fix.safe
    out = fixed(code, "XLA109")
    assert out.index('model.to("cuda")') < out.index("decay = [")


def test_parameters_taken_where_the_model_is_built_make_the_reorder_a_review():
    # Held-out 70 (pytorch-video-recognition): each branch builds the model and its parameter
    # groups; the move can only go after the branches, past where the groups were taken.
    code = """
    import torch
    import torch.nn as nn


    def main(kind):
        if kind == "a":
            model = nn.Linear(4, 2)
            groups = [{"params": list(model.parameters()), "lr": 0.1}]
        else:
            model = nn.Linear(4, 3)
            groups = model.parameters()
        optimizer = torch.optim.SGD(groups, lr=0.1)
        model.to("cuda")
        return optimizer
    """
    (f,) = findings(code, "XLA109")
    assert f.fix is not None and not f.fix.safe
    assert f.fix.review_reason.startswith(
        "the optimizer takes `groups`, built from `model` in the statement that binds `model` "
        "(line 6), before the move"
    )
    assert "a list of them keeps the CPU ones" in f.fix.review_reason
