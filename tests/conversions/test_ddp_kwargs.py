"""XLA205: ``DDP(model, device_ids=[...], **ddp_args)`` with the dict built in the same
function from literal keys (no output_device): device_ids go as a safe fix, the ``**ddp_args``
stay, and the conversion trains under torch_xla (PJRT CPU) with the original's losses."""

from __future__ import annotations

from .harness import FIXTURES, assert_proven, prove


def test_ddp_with_unpacked_options_loses_device_ids_and_trains():
    result = prove(FIXTURES / "ddp_kwargs_static_graph.py")
    out = result.converted_source
    assert "ddp_model = DDP(\n        model, **ddp_args\n    )" in out or (
        "DDP(model, **ddp_args)" in out
    )
    assert "device_ids=" not in out and '"--dist-backend", default="xla"' in out
    assert_proven(result)
