"""XLA117's fix moves only the unmoved argument of the model call; another read of that field
in the loop (held-out 53, HRNet's flip test: ``model(input)`` then ``model(input.flip(3))``)
still gets the CPU tensor, so the fix waits for review and says where."""

from tests.helpers import findings, src

VALIDATE = src("""
import torch


def validate(model, loader, flip):
    model = torch.nn.DataParallel(model).cuda()
    with torch.no_grad():
        for i, (input, target) in enumerate(loader):
            target = target.cuda(non_blocking=True)
            output = model(input)
            if flip:
                output = output + model(input.flip(3))
            loss = (output - target).pow(2).mean()
""")


def test_another_read_of_the_field_makes_the_fix_wait_and_is_named():
    (f,) = [f for f in findings(VALIDATE, "XLA117") if "`input` goes to the model" in f.message]
    assert f.fix is not None and not f.fix.safe
    assert "line 11" in f.fix.review_reason and "input.flip(3)" in f.fix.review_reason


def test_a_metadata_read_leaves_the_fix_safe():
    code = VALIDATE.replace("model(input.flip(3))", "input.shape[0]")
    (f,) = [f for f in findings(code, "XLA117") if "`input` goes to the model" in f.message]
    assert f.fix is not None and f.fix.safe
