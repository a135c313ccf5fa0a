"""XLA117: a loop that moves one field of its batch and hands another to the model unmoved
(the wrapper's scatter did it on CUDA; held-out 17, 3D-ResNets training.py / validation.py)."""

from tests.helpers import findings, fixed

TRAIN = """
import torch

def train_epoch(data_loader, model, criterion, optimizer, device):
    model.train()
    for i, (inputs, targets) in enumerate(data_loader):
        targets = targets.to(device, non_blocking=True)
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def _unmoved(code: str) -> list:
    return [f for f in findings(code, "XLA117") if "without being moved" in f.message]


def test_the_unmoved_input_is_found_and_moved_where_the_targets_go():
    (f,) = _unmoved(TRAIN)
    assert f.span.start.line + 1 == 7 and f.fix is not None and f.fix.safe
    assert "`inputs`" in f.message and "`targets`" in f.message
    assert "outputs = model(inputs.to(device))" in fixed(TRAIN, "XLA117")


def test_a_validation_loop_under_no_grad_too():
    code = """
    import torch
    def val_epoch(data_loader, model, device):
        model.eval()
        with torch.no_grad():
            for inputs, targets in data_loader:
                targets = targets.cuda()
                outputs = model(inputs)
    """
    (f,) = _unmoved(code)
    assert "model(inputs.cuda())" in fixed(code, "XLA117")


def test_a_validation_loop_in_eval_mode_without_no_grad_too():
    # held-out 19 (CutMix-PyTorch validate(): `model.eval()`, no no_grad, `model(input)` of a
    # DataParallel model): the safe-fixed script crashed there ("Expected XLA tensor").
    code = """
    import torch
    def validate(val_loader, model, criterion):
        model.eval()
        for i, (input, target) in enumerate(val_loader):
            target = target.cuda()
            output = model(input)
            loss = criterion(output, target)
    """
    (f,) = _unmoved(code)
    assert "output = model(input.cuda())" in fixed(code, "XLA117")


def test_a_later_argument_may_be_strings_and_is_left_alone():
    # BLIP: model(image, caption) with caption a tuple of str.
    code = TRAIN.replace("outputs = model(inputs)", "outputs = model(targets, inputs)")
    assert _unmoved(code) == []


def test_an_xla_loader_moves_whole_batches():
    code = """
    import torch_xla
    import torch_xla.distributed.parallel_loader as pl
    def train_epoch(loader, model, optimizer, device):
        for inputs, targets in pl.MpDeviceLoader(loader, device):
            targets = targets.to(device)
            loss = model(inputs).sum() + targets.sum()
            loss.backward()
            optimizer.step()
    """
    assert _unmoved(code) == []


def test_nothing_moved_is_the_other_finding_not_this_one():
    code = TRAIN.replace("        targets = targets.to(device, non_blocking=True)\n", "")
    assert _unmoved(code) == []


def test_a_callee_not_shown_to_be_a_module_gets_its_fix_for_review():
    # Nothing says `encoder` is a module: it may prepare the batch (a tokenizer, a
    # transform), and `inputs` may then be a list of strings that `.to()` breaks.
    code = TRAIN.replace("outputs = model(inputs)", "outputs = encoder(inputs)")
    (f,) = _unmoved(code)
    assert f.fix is not None and not f.fix.safe
    assert "nothing here shows `encoder` is a module" in f.fix.review_reason
    # A module wrapped where it is bound is one.
    code = TRAIN.replace("    model.train()\n", "    model = torch.nn.DataParallel(model).cuda()\n")
    (f,) = _unmoved(code)
    assert f.fix is not None and f.fix.safe


def test_a_call_whose_result_the_loop_moves_is_not_the_model():
    # Held-out 84 (ALBEF's VQA.py): `tokenizer(question, ..., return_tensors="pt").to(device)`
    # with `question` a list of strings from the collate function; moving `question` raised
    # "'list' object has no attribute 'to'" on the first step.
    code = """
    import torch

    def train(model, data_loader, tokenizer, optimizer, device):
        model.train()
        for i, (image, question, answer) in enumerate(data_loader):
            image = image.to(device, non_blocking=True)
            question_input = tokenizer(question, padding="longest", return_tensors="pt").to(device)
            answer_input = tokenizer(answer, padding="longest", return_tensors="pt").to(device)
            loss = model(image, question_input, answer_input)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    """
    assert _unmoved(code) == []
    assert "question.to(" not in fixed(code, unsafe=True)


def test_a_field_wrapped_in_an_autograd_variable_is_the_field():
    # TSM's train loop (held-out 120): ``input_var = torch.autograd.Variable(input)``; since
    # torch 0.4 the Variable is the tensor itself, on the CPU where the loader left it.
    code = TRAIN.replace(
        "        outputs = model(inputs)\n",
        "        inputs_var = torch.autograd.Variable(inputs)\n        outputs = model(inputs_var)\n",
    )
    (f,) = _unmoved(code)
    assert "`inputs_var`" in f.message and f.fix is not None and f.fix.safe
    assert "outputs = model(inputs_var.to(device))" in fixed(code, "XLA117")
    # Moved before it is wrapped, or the alias bound twice: nothing to say.
    moved = code.replace("Variable(inputs)", "Variable(inputs.to(device))")
    assert _unmoved(moved) == []
    twice = code.replace(
        "        outputs = model(inputs_var)\n",
        "        inputs_var = inputs_var.to(device)\n        outputs = model(inputs_var)\n",
    )
    assert _unmoved(twice) == []
