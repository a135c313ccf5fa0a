"""XLA109 where a module's own method moves it and is handed the optimizer built from it
(held-out 178's DeepFM: ``optimizer = optim.Adam(model.parameters())`` then
``model.fit(loader, optimizer)``, whose first line is ``self.train().to(device=self.device)``).
Converted, the picker made the device XLA and the model never trained (no error). Now an error
at the build, and the picker's fix waits for review."""

import os
import subprocess
import sys

from tests.helpers import findings, fixed, src

DEEP = src("""
import torch
import torch.nn as nn
import torch.optim as optim


class Net(nn.Module):
    def __init__(self, use_cuda=True):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        if use_cuda and torch.cuda.is_available():
            self.device = torch.device("cuda")
        else:
            self.device = torch.device("cpu")

    def forward(self, x):
        return self.fc(x)

    def fit(self, batches, optimizer, epochs=1):
        model = MOVE
        for _ in range(epochs):
            for x, y in batches:
                x, y = x.to(self.device), y.to(self.device)
                loss = ((model(x) - y) ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                print("loss", loss.item())
        print("weight", float(self.fc.weight.sum()))


if __name__ == "__main__":
    torch.manual_seed(0)
    batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
    model = Net(use_cuda=True)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    model.fit(batches, optimizer)
""")


def test_the_build_handed_to_a_self_moving_method_is_an_error():
    code = DEEP.replace("MOVE", "self.train().to(device=self.device)")
    (f,) = [f for f in findings(code, "XLA109")]
    assert (
        f.span.start.line + 1
        == code.split("\n").index("    optimizer = optim.SGD(model.parameters(), lr=0.1)") + 1
    )
    assert "`Net.fit`" in f.message and "self.train().to(device=self.device)" in f.message
    assert f.fix is None
    # The picker's safe fix waits: on XLA the model would never train.
    device = [g for g in findings(code, "XLA101") if g.fix is not None]
    assert device and all(not g.fix.safe for g in device)


def test_convert_leaves_a_script_that_still_trains(tmp_path):
    code = DEEP.replace("MOVE", "self.train().to(device=self.device)")
    out = fixed(code)
    script = tmp_path / "train.py"
    script.write_text(out)
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    before = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.stdout.splitlines()[-1] == before.stdout.splitlines()[-1]  # trained alike


def test_an_optimizer_built_after_a_move_at_the_caller_is_not_reported():
    code = DEEP.replace("MOVE", "self.train().to(device=self.device)").replace(
        "    optimizer = optim.SGD(", "    model.to(model.device)\n    optimizer = optim.SGD("
    )
    assert [f for f in findings(code, "XLA109") if "Net.fit" in f.message] == []
