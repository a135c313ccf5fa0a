from xla_lens.rules.xla202_rank_world_size import NO_LAUNCHER_REASON

from tests.helpers import findings, fixed, src

ENV = """
import os
from os import environ as env

local_rank = int(os.environ["LOCAL_RANK"])
rank = int(os.environ.get("RANK", 0))
world_size = int(os.getenv("WORLD_SIZE", "1"))
is_first = env.get("RANK", "0") == "0"
os.environ["RANK"] = "0"
home = os.environ["HOME"]
"""


def test_env_reads_modern():
    found = findings(ENV, "XLA202")
    assert [f.span.start.line for f in found] == [3, 4, 5, 6]
    # Nothing here starts the processes: how the script is launched decides (review).
    assert all(f.fix.review_reason == NO_LAUNCHER_REASON for f in found)
    assert fixed(ENV, "XLA202") == src(ENV)
    assert fixed(ENV, "XLA202", unsafe=True) == src(
        """
        import os
        from os import environ as env
        import torch_xla.runtime as xr

        local_rank = xr.local_ordinal()
        rank = xr.global_ordinal()
        world_size = xr.world_size()
        is_first = str(xr.global_ordinal()) == "0"
        os.environ["RANK"] = "0"
        home = os.environ["HOME"]
        """
    )


def test_env_reads_legacy():
    out = fixed(ENV, "XLA202", target="legacy", unsafe=True)
    assert "local_rank = xm.get_local_ordinal()\n" in out
    assert "rank = xm.get_ordinal()\n" in out
    assert "world_size = xm.xrt_world_size()\n" in out
    assert "import torch_xla.core.xla_model as xm\n" in out


def test_torch_distributed_calls_follow_aliases():
    code = """
    import torch.distributed as D
    from torch.distributed import get_world_size
    import torch_xla.runtime as R

    if D.get_rank() == 0:
        print(get_world_size())
    """
    assert fixed(code, "XLA202") == src(
        """
        import torch.distributed as D
        from torch.distributed import get_world_size
        import torch_xla.runtime as R

        if R.global_ordinal() == 0:
            print(R.world_size())
        """
    )
    legacy = fixed(code, "XLA202", target="legacy")
    assert "if xm.get_ordinal() == 0:\n    print(xm.xrt_world_size())\n" in legacy


def test_subgroup_queries_have_no_automatic_fix():
    code = """
    import torch.distributed as dist
    r = dist.get_rank(group)
    """
    (f,) = findings(code, "XLA202")
    assert f.fix is None and f.manual


def test_converted_code_reports_nothing():
    code = """
    import os
    import torch_xla.runtime as xr
    import torch_xla.core.xla_model as xm
    rank = xr.global_ordinal()
    local = xm.get_local_ordinal()
    n = xr.world_size()
    other = os.environ.get("MASTER_ADDR")
    key = "RANK"
    """
    assert findings(code, "XLA202") == []
    assert findings(code, "XLA202", target="legacy") == []


def test_rank_sentinels_become_world_size_tests():
    code = """
    import os
    ddp = int(os.environ.get("RANK", -1)) != -1  # torchrun?
    single = os.environ.get("LOCAL_RANK", -1) == -1
    if "WORLD_SIZE" in os.environ:
        pass
    if os.environ.get("LOCAL_RANK") is not None:
        pass
    """
    found = findings(code, "XLA202")
    assert len(found) == 4 and all(f.fix.review_reason == NO_LAUNCHER_REASON for f in found)
    out = fixed(code, "XLA202", unsafe=True)
    assert "ddp = xr.world_size() > 1  # torchrun?\n" in out
    assert "single = xr.world_size() == 1\n" in out
    assert "if xr.world_size() > 1:\n    pass\nif xr.world_size() > 1:\n" in out


def test_sentinel_default_outside_a_sentinel_test_is_a_reviewed_fix():
    code = """
    import os
    local_rank = int(os.environ.get("LOCAL_RANK", -1))
    if local_rank != -1:
        pass
    """
    (f,) = findings(code, "XLA202")
    assert not f.fix.safe and "-1" in f.fix.review_reason
    assert fixed(code, "XLA202") == src(code)


def test_dist_queries_are_kept_when_the_script_builds_a_process_group():
    code = """
    import torch.distributed as dist
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    """
    assert findings(code, "XLA202") == []


def test_sentinel_guarding_per_rank_device_placement_is_a_reviewed_fix():
    # qlora: the branch builds a CUDA device_map from the local rank. Under the XLA launcher the
    # env var is unset and the branch is skipped; `world_size > 1` would run it on XLA.
    code = """
    import os
    device_map = "auto"
    if os.environ.get("LOCAL_RANK") is not None:
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        device_map = {"": local_rank}
    if not int(os.environ.get("RANK", -1)) == -1:
        torch.cuda.set_device(0)
    if int(os.environ.get("RANK", -1)) == -1:
        pass
    else:
        args.gpu = 0
    """
    sentinels = [f for f in findings(code, "XLA202") if "asks whether" in f.message]
    assert [f.span.start.line + 1 for f in sentinels] == [3, 6, 8]
    for f in sentinels:
        assert not f.fix.safe and "places devices by rank" in f.fix.review_reason
        assert "needs review" in f.message
    assert "line 5: device_map" in sentinels[0].message
    assert 'if os.environ.get("LOCAL_RANK") is not None:' in fixed(code, "XLA202")


def test_sentinel_guarding_no_device_placement_stays_safe():
    code = """
    import os
    if int(os.environ.get("RANK", -1)) != -1:
        print("distributed")
    else:
        device = "cuda"
    """
    (f,) = findings(code, "XLA202")
    # The device line is in the branch for runs without torchrun: only the launch question.
    assert f.fix.review_reason == NO_LAUNCHER_REASON


def test_an_int_of_a_read_with_no_default_is_safe_it_cannot_see_the_default():
    # UQABench (held-out 158): unset, int(None) raises TypeError at once, so the script runs
    # only where torchrun set the variable, like int(os.environ["LOCAL_RANK"]); the launcher
    # XLA204 adds is then started with plain python, where only the runtime's answer works.
    code = """
    import os
    import torch.distributed as dist

    def main():
        dist.init_process_group(backend="nccl")
        local_rank = int(os.getenv("LOCAL_RANK"))
        rank = int(os.environ.get("RANK"))
        print(local_rank, rank)

    if __name__ == "__main__":
        main()
    """
    found = findings(code, "XLA202")
    assert len(found) == 2 and all(f.fix.safe for f in found)
    out = fixed(code)
    assert "    local_rank = xr.local_ordinal()\n    rank = xr.global_ordinal()\n" in out
    assert "torch_xla.launch(_mp_fn)" in out


def test_an_int_of_a_read_whose_type_error_is_caught_stays_for_review():
    code = """
    import os
    try:
        local_rank = int(os.getenv("LOCAL_RANK"))
    except TypeError:
        local_rank = -1
    """
    (f,) = findings(code, "XLA202")
    assert not f.fix.safe and "None" in f.fix.review_reason
