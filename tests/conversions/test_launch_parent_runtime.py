"""XLA202 in the launcher's parent process (held-out imagenet trap): the world size read in
main() before mp.spawn must not become xr.world_size() once XLA204 swaps mp.spawn for
torch_xla.launch, or the launch refuses to start ("Runtime is already initialized")."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from xla_lens.engine import analyze

from tests.conversions.harness import (
    FIXTURES,
    _env,
    assert_proven,
    convert,
    prove,
    run_script,
)

FIXTURE = FIXTURES / "spawn_world_size_in_parent.py"
ENV_READ = 'world_size = int(os.environ.get("WORLD_SIZE", 1))'

pytestmark = pytest.mark.xla


def test_reviewer_accepting_the_launcher_gets_a_run_that_starts():
    result = prove(FIXTURE, steps=3, cuda_shim=True, accept_review=("XLA204",))
    assert "torch_xla.launch(worker, args=(world_size,))" in result.converted_source
    assert ENV_READ in result.converted_source, result.converted_source
    (left,) = [f for f in analyze(result.converted_source).findings if f.code == "XLA202"]
    assert left.fix is None and "Runtime is already initialized" in left.manual
    assert_proven(result, expect_mp_fn=True)


def test_every_review_fix_accepted_still_starts():
    # The held-out reproducer ran `fix --unsafe-fixes`: XLA202 offers no fix in the parent, so
    # even accepting every review fix leaves the env read where it is.
    result = prove(FIXTURE, steps=3, cuda_shim=True, unsafe=True)
    assert ENV_READ in result.converted_source
    assert_proven(result, expect_mp_fn=True)


def test_the_runtime_read_in_the_parent_is_what_breaks_the_launch():
    # The rewrite XLA202 no longer makes, done by hand on the reviewed conversion: the crash.
    source, _, _ = convert(FIXTURE.read_text(), FIXTURE.name, accept_review=("XLA204",))
    broken = source.replace(ENV_READ, "world_size = xr.world_size()").replace(
        "import torch_xla\n", "import torch_xla\nimport torch_xla.runtime as xr\n", 1
    )
    assert broken != source and "import torch_xla.runtime as xr" in broken
    with tempfile.TemporaryDirectory(prefix="xla-lens-proof-") as tmp:
        script = Path(tmp) / FIXTURE.name
        script.write_text(broken)
        run = run_script(script, env=_env(3, PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1"))
    assert run.returncode != 0
    assert "Runtime is already initialized" in run.stderr
