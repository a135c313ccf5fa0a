"""XLA401 on a script that places nothing on a device (a CPU tutorial): its tensors are CPU
tensors as written and stay so after conversion until they are moved (XLA117). The reads are
still worth knowing about, but the message must not claim they sync a device now."""

from tests.helpers import findings

CPU_TUTORIAL = """
import torch
import torch.nn as nn

x = torch.linspace(-1, 1, 50).unsqueeze(1)
y = x.pow(2)
net = nn.Sequential(nn.Linear(1, 8), nn.ReLU(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
loss_func = nn.MSELoss()

for t in range(100):
    prediction = net(x)
    loss = loss_func(prediction, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if t % 20 == 0:
        print("step", t, "loss", loss.item())
        print(f"loss {loss}")
"""


def test_cpu_script_reads_are_not_called_device_syncs():
    found = findings(CPU_TUTORIAL, "XLA401")
    assert [f.span.start.line for f in found] == [16, 17]
    for f in found:
        assert "reads a device tensor" not in f.message
        assert "nothing in this script places its tensors on a device (XLA117)" in f.message
        assert "a CPU tensor as written" in f.message
        assert "once the model and its batches are on the XLA device" in f.message
    # The fix is the same (a closure also runs on CPU tensors at the sync XLA107 adds).
    assert all(f.fix is not None and f.fix.safe for f in found)


def test_a_script_that_places_tensors_keeps_the_device_message():
    code = CPU_TUTORIAL.replace(
        "x = torch.linspace(-1, 1, 50)", "x = torch.linspace(-1, 1, 50).cuda()"
    )
    code = code.replace("for t in range(100):", "net.cuda()\nfor t in range(100):")
    found = findings(code, "XLA401")
    assert found
    assert all("reads a device tensor on the host" in f.message for f in found)
    assert all("XLA117" not in f.message for f in found)
