"""XLA101 on a training device that a config this file never sees decides
(``torch.device(cfg.training.device)``, diffusion_policy's workspaces, held-out 37): the model
moves there, so after the conversion it must be the XLA device. The fix writes the XLA device
for review: the configured value would then be ignored."""

from tests.helpers import findings, fixed

WORKSPACE = """
import torch


class Workspace:
    def __init__(self, cfg):
        self.cfg = cfg
        self.model = torch.nn.Linear(4, 1)

    def run(self):
        cfg = self.cfg
        device = torch.device(cfg.training.device)
        self.model.to(device)
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for batch in self.loader:
            loss = self.model(batch.to(device)).mean()
            loss.backward()
            opt.step()
"""


def test_a_configured_training_device_is_reported_for_review():
    (f,) = findings(WORKSPACE, "XLA101")
    assert "comes from `cfg.training.device`" in f.message
    assert f.fix is not None and not f.fix.safe and "ignored" in f.fix.review_reason
    assert "device = torch_xla.device()" in fixed(WORKSPACE, "XLA101", unsafe=True)


def test_a_device_this_file_decides_or_never_places_with_is_left_to_the_other_checks():
    option = WORKSPACE.replace(
        "import torch\n",
        "import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
        'parser.add_argument("--device", default="cpu")\n',
    ).replace("cfg.training.device", "cfg.device")
    assert not [f for f in findings(option, "XLA101") if "never sets" in f.message]
    stored = WORKSPACE.replace(
        "cfg = self.cfg\n", 'cfg = self.cfg\n        cfg.training.device = "cpu"\n'
    )
    assert findings(stored, "XLA101") == []
    unplaced = WORKSPACE.replace("self.model.to(device)", "print(device)").replace(
        "batch.to(device)", "batch"
    )
    assert findings(unplaced, "XLA101") == []
    # Written for XLA: it uses API no fix writes. A bare ``import torch_xla`` is no evidence
    # (the syncs other fixes add import it: see the test below).
    already = "import torch_xla.debug.metrics as met\n" + WORKSPACE
    assert findings(already, "XLA101") == []


def test_a_configured_device_handed_to_a_constructor_in_a_script_that_trains_elsewhere():
    # drq's train.py (held-out 71): `self.device = torch.device(cfg.device)` goes to the replay
    # buffer; the agent that trains is built by hydra.utils.instantiate, out of this file's sight.
    code = """
    import hydra
    import torch


    class Workspace:
        def __init__(self, cfg):
            self.device = torch.device(cfg.device)
            self.agent = hydra.utils.instantiate(cfg.agent)
            self.replay_buffer = ReplayBuffer((3, 84, 84), 100000, self.device)


    @hydra.main(config_path="config.yaml")
    def main(cfg):
        Workspace(cfg).run()


    if __name__ == "__main__":
        main()
    """
    (f,) = findings(code, "XLA101")
    assert "comes from `cfg.device`" in f.message and not f.fix.safe
    # A plain function taking the device (a logger, a print) places nothing.
    logged = code.replace("ReplayBuffer((3, 84, 84), 100000, self.device)", "log(self.device)")
    assert findings(logged, "XLA101") == []
    # A module the program calls (detr's models/detr.py `build(args)`) leaves it to the program.
    module = code[: code.index("    @hydra.main")]
    assert findings(module, "XLA101") == []


def test_a_configured_device_read_as_it_is_counts_too():
    # Held-out 86 (HTR-best-practices' trainer): `device = config.device` ("cuda:0" in
    # config.yaml), then `net.to(device)`.
    code = WORKSPACE.replace("torch.device(cfg.training.device)", "cfg.device")
    (f,) = findings(code, "XLA101")
    assert "comes from `cfg.device`" in f.message and not f.fix.safe
    assert "device = torch_xla.device()" in fixed(code, "XLA101", unsafe=True)


def test_a_tensor_or_framework_device_is_not_a_setting():
    for owner in ("batch", "accelerator", "self.model"):
        code = WORKSPACE.replace("torch.device(cfg.training.device)", f"{owner}.device")
        assert not [f for f in findings(code, "XLA101") if "never sets" in f.message], owner


YAML_CONFIG = """
import argparse
import torch
import yaml


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="settings/train.yaml")
    args = parser.parse_args()
    with open(args.config) as f:
        SETTINGS = yaml.safe_load(f)
    device = torch.device(SETTINGS["device"])
    model = torch.nn.Linear(4, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        loss = model(torch.randn(8, 4).to(device)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_a_device_looked_up_by_key_in_a_loaded_config_is_reported_for_review():
    # held-out 132 (WavCaps): `config = yaml.safe_load(f)` then torch.device(config["device"]),
    # "cuda" in the YAML file: the conversion's syncs went in around a CUDA model.
    (f,) = findings(YAML_CONFIG, "XLA101")
    assert 'comes from `SETTINGS["device"]`' in f.message
    assert not f.fix.safe and "ignored" in f.fix.review_reason
    assert "device = torch_xla.device()" in fixed(YAML_CONFIG, "XLA101", unsafe=True)
    nested = YAML_CONFIG.replace('SETTINGS["device"]', 'SETTINGS["train"]["device"]')
    assert ['SETTINGS["train"]["device"]' in f.message for f in findings(nested, "XLA101")] == [
        True
    ]
    # Set in this file, or a key that is no setting of a loaded or named config: not this check.
    stored = YAML_CONFIG.replace(
        "    device = torch", '    SETTINGS["device"] = "cpu"\n    device = torch'
    )
    assert findings(stored, "XLA101") == []
    loaded = YAML_CONFIG.replace("SETTINGS", "spec")  # no settings name: loaded from YAML
    assert ['`spec["device"]`' in f.message for f in findings(loaded, "XLA101")] == [True]
    batch = YAML_CONFIG.replace("yaml.safe_load(f)", "load_batch(f)").replace("SETTINGS", "batch")
    assert findings(batch, "XLA101") == []


def test_the_finding_outlives_the_syncs_other_fixes_add():
    # videowalk (held-out 171): XLA107's sync imports torch_xla; the device is still the
    # config's, so the finding (and the cuDNN setting waiting for it) must stay.
    from xla_lens.engine import fix_source

    code = WORKSPACE.replace(
        "        device = torch.device(cfg.training.device)\n",
        "        device = torch.device(cfg.training.device)\n"
        "        torch.backends.cudnn.benchmark = True\n",
    )
    out = fix_source(code, target="modern")
    assert "torch_xla.sync()" in out.source
    assert "torch.backends.cudnn.benchmark = True" in out.source
    left = [f for f in out.remaining_all if f.code == "XLA101"]
    assert left and "comes from `cfg.training.device`" in left[0].message
