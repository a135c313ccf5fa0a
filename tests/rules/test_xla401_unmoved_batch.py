"""XLA401 on a batch element the loop never moves (held-out 42, MedSAM: ``for step, (image,
gt2D, boxes, _) in enumerate(loader)`` moves ``image`` and ``gt2D`` with ``.to(device)`` and
reads ``boxes.detach().cpu().numpy()``): the script places its batch element by element, so
``boxes`` stays a CPU tensor and the read syncs nothing. A distributed loop gets
``pl.MpDeviceLoader`` (XLA106), which moves every element: there the read stays."""

from tests.helpers import findings

LOOP = """
import torch
from torch.utils.data import DataLoader


def main(model, dataset, optimizer):
    device = torch.device("cuda:0")
    model.to(device)
    loader = DataLoader(dataset, batch_size=8)
    for epoch in range(2):
        for step, (image, target, boxes) in enumerate(loader):
            boxes_np = boxes.detach().cpu().numpy()
            image, target = image.to(device), target.to(device)
            loss = model(image, target, boxes_np)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def _read_lines(code: str) -> list[int]:
    return [f.span.start.line + 1 for f in findings(code, "XLA401")]


def test_an_element_the_loop_never_moves_is_a_cpu_tensor():
    assert 11 not in _read_lines(LOOP)


def test_an_element_the_loop_moves_is_still_read_from_the_device():
    moved = (
        LOOP.replace(
            "image, target = image.to(device), target.to(device)",
            "image, target, boxes = image.to(device), target.to(device), boxes.to(device)",
        )
        .replace(
            "            boxes_np = boxes.detach().cpu().numpy()\n",
            "",
        )
        .replace(
            "            optimizer.step()\n",
            "            optimizer.step()\n            print(boxes.cpu().numpy())\n",
        )
    )
    assert 16 in _read_lines(moved)


def test_a_loop_that_moves_no_element_itself_gives_no_evidence():
    # Nothing moved element by element: the loader's batch may be anywhere.
    code = LOOP.replace(
        "image, target = image.to(device), target.to(device)", "image, target = image, target"
    )
    assert 11 in _read_lines(code)


def test_a_distributed_loop_keeps_the_read():
    # Convert wraps its loader in pl.MpDeviceLoader (XLA106's safe fix: the model and its
    # optimizer are built here, so the device fix is safe too), which moves every element.
    code = LOOP.replace("def main(model, dataset, optimizer):", "def main(dataset):").replace(
        "    model.to(device)\n",
        "    model = torch.nn.Linear(4, 1)\n"
        "    model.to(device)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    torch.distributed.init_process_group('nccl')\n"
        "    model = torch.nn.parallel.DistributedDataParallel(model)\n",
    )
    (wrap,) = findings(code, "XLA106")
    assert wrap.fix is not None and wrap.fix.safe
    assert 15 in _read_lines(code)


def test_a_distributed_loop_whose_loader_stays_plain_reads_a_cpu_batch():
    # The model comes with its optimizer from the caller: the device fix, and so the wrap,
    # wait for review; until then the loader hands CPU batches, and the read syncs nothing.
    code = LOOP.replace(
        "    model.to(device)\n",
        "    model.to(device)\n"
        "    torch.distributed.init_process_group('nccl')\n"
        "    model = torch.nn.parallel.DistributedDataParallel(model)\n",
    )
    (wrap,) = findings(code, "XLA106")
    assert wrap.fix is not None and not wrap.fix.safe
    assert 13 not in _read_lines(code)
