"""XLA402 on loaders whose batches all hold one sample: no smaller last batch."""

from tests.helpers import findings


def test_a_loader_of_single_sample_batches_has_no_short_last_batch():
    # KAIR's test loader (held-out 31): DataLoader(test_set, batch_size=1, drop_last=False).
    code = """
    import torch
    from torch.utils.data import DataLoader

    model = torch.nn.Linear(3, 1).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader = DataLoader(train_set, batch_size=1)
    test_loader = DataLoader(test_set, batch_size=1, shuffle=False, drop_last=False)
    other_loader = DataLoader(test_set, 1, drop_last=False)
    for x, y in train_loader:
        loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """
    assert findings(code, "XLA402") == []
    assert len(findings(code.replace("batch_size=1)", "batch_size=8)"), "XLA402")) == 1
