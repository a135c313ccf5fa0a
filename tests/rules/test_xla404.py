from xla_lens.rules.registry import get_rule

from tests.helpers import findings, src


def test_tensor_conditions_in_the_loop_are_reported():
    code = """
    import torch

    def train():
        for step, (x, y) in enumerate(loader):
            outputs = model(x)
            loss = criterion(outputs, y)
            if loss > 10:
                print("big")
            if torch.isnan(loss):
                continue
            while x.any():
                x = x - 1
            assert torch.isfinite(loss).all()
            scale = 2 if (outputs.sum() > 0) else 1
            loss.backward()
            optimizer.step()
    """
    found = findings(code, "XLA404")
    assert [f.span.start.line for f in found] == [6, 8, 10, 12, 13]
    assert all(f.fix is None and "torch.where" in f.manual for f in found)
    assert "if tests a tensor" in found[0].message


def test_training_while_loop_condition_counts():
    code = """
    loss = criterion(model(x), y)
    while loss > 0.1:
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
    """
    (f,) = findings(code, "XLA404")
    assert f.span.start.line == 1


def test_int_counters_metadata_and_host_values_report_nothing():
    code = """
    import torch

    def train():
        best = 0.0
        for step, (x, y) in enumerate(loader):
            outputs = model(x)
            loss = criterion(outputs, y)
            if step % 10 == 0:
                pass
            if x.shape[0] != 32 or x.dim() == 2:
                pass
            if outputs is None or "loss" in outputs:
                pass
            if loss.item() > best:
                best = loss.item()
            if best > 1:
                pass
            loss.backward()
            optimizer.step()
        for epoch in tqdm(range(3)):
            for i, batch in enumerate(loader):
                if epoch == i:
                    pass
                model(batch).backward()
                optimizer.step()
    """
    assert findings(code, "XLA404") == []


def test_conditions_outside_the_training_loop_report_nothing():
    code = """
    import torch
    loss = model(x).sum()
    if loss > 1:
        pass
    for batch in loader:
        if batch.any():
            pass
    """
    assert findings(code, "XLA404") == []


def test_hover():
    assert "torch.where" in get_rule("XLA404").hover["torch.isnan"]


def test_itertools_count_is_a_counter_not_a_batch():
    code = """
    import itertools

    for step in itertools.count():
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        if step > 100:
            break
    """
    assert findings(code, "XLA404") == []


def test_python_numbers_from_local_functions_and_names_are_not_tensor_tests():
    code = """
    def evaluate(model, loader):
        losses = []
        for x in loader:
            losses.append(model(x).sum().item())
        mean_loss = torch.tensor(losses).mean().item()
        return mean_loss

    def eval_epoch(model, loader):
        total_loss = 0
        for x in loader:
            total_loss += model(x).sum().item()
        return total_loss / len(loader)

    best_loss = None
    for step, x in enumerate(loader):
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        if step % 500 == 0:
            test_loss = evaluate(model, val_loader)
            valid_loss = eval_epoch(model, val_loader)
            if best_loss is None or test_loss < best_loss:
                best_loss = test_loss
            if valid_loss <= 1.0:
                pass
    """
    assert findings(code, "XLA404") == []
    # A helper that returns the loss tensor itself still syncs when tested.
    tensor_helper = code.replace("return mean_loss", "return model(x).sum()")
    (f,) = findings(tensor_helper, "XLA404")
    assert src(tensor_helper).splitlines()[f.span.start.line].strip().startswith("if best_loss")


def test_a_tensor_attribute_does_not_make_every_attribute_of_self_a_tensor():
    # minGPT-style trainer: `logits, self.loss = model(...)` binds a tensor to self.loss only;
    # the step counter self.iter_num stays a Python int (held-out probe, wrong finding).
    code = """
    import torch

    class Trainer:
        def run(self, loader, config):
            self.iter_num = 0
            data_iter = iter(loader)
            while True:
                x, y = next(data_iter)
                logits, self.loss = self.model(x.cuda(), y)
                self.loss.backward()
                self.opt.step()
                self.iter_num += 1
                if config.max_iters is not None and self.iter_num >= config.max_iters:
                    break
                if self.loss > 10:
                    break
    """
    lines = [f.span.start.line + 1 for f in findings(code, "XLA404")]
    assert lines == [15], lines  # only the test of the tensor attribute


def test_a_counter_zipped_with_the_loader_is_a_python_int():
    # onsets-and-frames (held-out 127): ``for i, batch in zip(tqdm(range(...)), cycle(loader))``.
    code = """
    import torch
    from itertools import cycle
    from tqdm import tqdm

    def train(model, loader, optimizer, checkpoint_interval):
        loop = tqdm(range(1, 100))
        for i, batch in zip(loop, cycle(loader)):
            loss = model(batch).sum()
            loss.backward()
            optimizer.step()
            if i % checkpoint_interval == 0:
                torch.save(model.state_dict(), f"model-{i}.pt")
            if batch.sum() > 0:
                print("positive")
    """
    found = findings(code, "XLA404")
    assert [f.span.start.line + 1 for f in found] == [13]  # the batch test, not the counter
