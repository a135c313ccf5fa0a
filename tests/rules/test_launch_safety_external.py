"""Launch safety with a launcher outside the file (held-out 15, SimCSE: ``_mp_fn(index):
main()`` for xla_spawn.py): a function only a replica reaches — here through a property
read, ``args.device`` — is no parent code, so its runtime call gets no parent-process note;
module-level runtime calls stay the parent's."""

from tests.helpers import findings, src

EXTERNAL = src("""
import torch
from transformers import HfArgumentParser, TrainingArguments


class Args(TrainingArguments):
    @property
    def _setup_devices(self):
        import torch_xla.core.xla_model as xm
        device = xm.xla_device()
        self._n_gpu = 0
        return device


def main():
    (args,) = HfArgumentParser((Args,)).parse_args_into_dataclasses()
    print(args.device)


def _mp_fn(index):
    main()


if __name__ == "__main__":
    main()
""")


def test_a_runtime_call_only_replicas_reach_is_no_parent_code():
    (f,) = findings(EXTERNAL, "XLA501")
    assert f.fix is not None
    assert "parent process" not in f.message
    assert "parent process" not in f.fix.review_reason
    # The script imports torch_xla only inside _setup_devices: a module-level import would
    # change where it fails without torch_xla, so the fix waits for review for that alone.
    assert not f.fix.safe and "imports torch_xla only inside" in f.fix.review_reason


def test_with_the_launch_in_the_file_a_module_level_call_is_still_the_parents():
    own = EXTERNAL.replace(
        'if __name__ == "__main__":\n    main()',
        'DEVICE = xm.xla_device()\n\nif __name__ == "__main__":\n    torch_xla.launch(_mp_fn)',
    ).replace(
        "import torch\n",
        "import torch\nimport torch_xla\nimport torch_xla.core.xla_model as xm\n",
        1,
    )
    module_level = [
        f for f in findings(own, "XLA501") if "DEVICE" in own.splitlines()[f.span.start.line]
    ]
    (f,) = module_level
    assert f.fix is not None and not f.fix.safe
    assert "parent process" in f.fix.review_reason


def test_a_picker_in_the_parent_of_an_xla_launch_gets_no_fix():
    # Held-out 59's GPT2-Chinese: `device = 'cuda' if ... else 'cpu'` in main(), which then
    # calls xmp.spawn. torch_xla.device() there makes the launch fail ("Runtime is already
    # initialized", measured): a fix that always breaks the launch is not offered at all.
    code = """
    import torch
    import torch_xla.distributed.xla_multiprocessing as xmp

    def train(index):
        print(index)

    def main():
        device = "cuda" if torch.cuda.is_available() else "cpu"
        print("using device:", device)
        weights = torch.zeros(3).to(device)
        xmp.spawn(train, args=(weights,))

    if __name__ == "__main__":
        main()
    """
    (f,) = findings(code, "XLA101")
    assert f.fix is None and "no fix here" in f.message
    assert "Runtime is already initialized" in f.manual
    # Only printed there (the replica binds its own device): nothing to report at all.
    printed = code.replace("        weights = torch.zeros(3).to(device)\n", "").replace(
        "args=(weights,)", "args=()"
    )
    assert findings(printed, "XLA101") == []
