"""A script with its own ``backend == "xla"`` mode (held-out 56's control: ``if backend ==
"xla": rank = _init_xla_distributed() else: rank = _init_cuda_distributed()``, and a device
helper that returns ``xm.xla_device()`` for it): the other side, the functions only it calls,
and what follows an XLA side that returns are its CUDA mode, left alone (removing
``torch.cuda.set_device(rank)`` there broke every CUDA rank's device)."""

from tests.helpers import findings, src

MODES = src("""
import torch
import torch.distributed as dist


def _init_cuda():
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank)
    return rank


def _init_xla():
    import torch_xla.distributed.xla_backend  # noqa: F401
    dist.init_process_group(backend="xla", init_method="xla://")
    return dist.get_rank()


def _device(backend, rank):
    if backend == "xla":
        import torch_xla.core.xla_model as xm
        return xm.xla_device()
    return torch.device(f"cuda:{rank}" if torch.cuda.is_available() else "cpu")


def main(backend):
    if backend == "xla":
        rank = _init_xla()
    else:
        rank = _init_cuda()
    device = _device(backend, rank)
    model = torch.nn.Linear(4, 1).to(device)
    return model
""")


def test_the_cuda_mode_and_its_helpers_are_left_alone():
    for code in ("XLA403", "XLA205", "XLA101"):
        assert findings(MODES, code) == [], code


def test_a_helper_also_handed_to_a_launcher_is_no_cuda_mode_code():
    # ``xmp.spawn(main, ...)`` on the XLA side runs ``main`` there too.
    code = MODES.replace(
        "    else:\n        rank = _init_cuda()\n",
        "    else:\n        rank = _init_cuda()\n        launch(_init_cuda)\n",
    ).replace(
        "import torch.distributed as dist\n",
        "import torch.distributed as dist\nfrom x import launch\n",
    )
    # _init_cuda is still only named on the CUDA side: left alone.
    assert findings(code, "XLA403") == []
    spawned = MODES + "\n\ndef run():\n    spawn(_init_cuda)\n"
    assert findings(spawned, "XLA403")
