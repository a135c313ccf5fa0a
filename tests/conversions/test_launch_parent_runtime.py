"""XLA202 in the launcher's parent process (held-out imagenet trap): the world size read in
main() before mp.spawn must not become xr.world_size() once XLA204 swaps mp.spawn for
torch_xla.launch, or the launch refuses to start ("Runtime is already initialized")."""

from __future__ import annotations

import pytest
from xla_lens.engine import analyze

from tests.conversions.harness import FIXTURES, assert_proven, prove

FIXTURE = FIXTURES / "spawn_world_size_in_parent.py"
ENV_READ = 'world_size = int(os.environ.get("WORLD_SIZE", 1))'

pytestmark = pytest.mark.xla


def test_reviewer_accepting_the_launcher_gets_a_run_that_starts():
    result = prove(FIXTURE, steps=3, cuda_shim=True, accept_review=("XLA204",))
    assert "torch_xla.launch(worker, args=(world_size,))" in result.converted_source
    assert ENV_READ in result.converted_source, result.converted_source
    (left,) = [f for f in analyze(result.converted_source).findings if f.code == "XLA202"]
    assert not left.fix.safe and "Runtime is already initialized" in left.message
    assert_proven(result, expect_mp_fn=True)


def test_the_review_is_needed_the_runtime_read_in_the_parent_breaks_the_launch():
    # Accepting XLA202's review fix too puts xr.world_size() in main(): the crash it prevents.
    result = prove(FIXTURE, steps=3, run_original=False, accept_review=("XLA204", "XLA202"))
    assert "world_size = xr.world_size()" in result.converted_source
    assert result.converted.returncode != 0
    assert "Runtime is already initialized" in result.converted.stderr
