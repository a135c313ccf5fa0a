"""XLA202 where torchrun may still start the script (held-out 38).

FastChat's ``train_lora.py``: ``world_size = int(os.environ.get("WORLD_SIZE", 1))`` in a script
with no launcher of its own. XLA204's fix adds ``def _mp_fn(index): train()`` for torch_xla's
launcher but leaves ``if __name__ == "__main__": train()``, which torchrun still starts; there
``xr.world_size()`` is 1 (measured on CPU PJRT), so the rewrite stays a review in every round.
yolov5's module-level ``LOCAL_RANK = int(os.getenv("LOCAL_RANK", -1))`` gets no fix (the
launcher's parent) but its advice keeps the -1 sentinel's meaning."""

from xla_lens.engine import fix_source

from tests.helpers import findings, src

TRAINER = """
import os

from transformers import Trainer


def train():
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    ddp = world_size != 1
    print(ddp)
    Trainer(model=None, args=None).train()
{tail}
"""

MAIN = '\n\nif __name__ == "__main__":\n    train()\n'


def test_an_added_mp_fn_beside_a_main_block_leaves_the_read_for_review():
    code = TRAINER.replace("{tail}", MAIN)
    (f,) = [f for f in findings(code, "XLA202") if "WORLD_SIZE" in f.message]
    assert f.fix is not None and not f.fix.safe and "torchrun" in f.fix.review_reason
    out = fix_source(src(code), "t.py").source
    assert 'int(os.environ.get("WORLD_SIZE", 1))' in out
    with_entry = TRAINER.replace("{tail}", "\n\ndef _mp_fn(index):\n    train()\n" + MAIN)
    (f,) = [f for f in findings(with_entry, "XLA202") if "WORLD_SIZE" in f.message]
    assert not f.fix.safe and "torchrun" in f.fix.review_reason


def test_a_module_level_sentinel_read_keeps_its_meaning_in_the_advice():
    code = """
    import os
    import torch
    import torch.distributed as dist

    LOCAL_RANK = int(os.getenv("LOCAL_RANK", -1))


    def main():
        if LOCAL_RANK != -1:
            dist.init_process_group("nccl")
        model = torch.nn.Linear(2, 2).cuda()
        return model


    if __name__ == "__main__":
        main()
    """
    # torchrun starts this script and keeps starting it (its group from torchrun's variables,
    # no launcher a safe fix adds): the sentinel reads what torchrun sets, as before.
    assert [f for f in findings(code, "XLA202") if "LOCAL_RANK" in f.message] == []
    # With torch_xla's launcher in the script, the read runs in the launcher's parent.
    launched = code.replace(
        "    main()\n",
        "    import torch_xla\n    torch_xla.launch(lambda i: main())\n",
    )
    (g,) = [f for f in findings(launched, "XLA202") if "LOCAL_RANK" in f.message]
    assert "once torch_xla's launcher" not in g.message
