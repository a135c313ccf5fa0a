"""XLA204's launch rewrite is safe only when the replicas it starts visibly cooperate."""

import ast

from xla_lens.engine import analyze

from tests.helpers import findings, fixed, src

UNCONDITIONAL = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args):
    dist.init_process_group("nccl")
    model = DDP(torch.nn.Linear(4, 1).to(dist.get_rank()))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if dist.get_world_size() > 1:
        sampler = torch.utils.data.DistributedSampler(data)
    for x in data:
        model(x).sum().backward()
        opt.step()


if __name__ == "__main__":
    args = argparse.ArgumentParser().parse_args()
    main(args)
"""

# DeiT / MAE main.py: the distributed setup follows a flag a helper of another module sets
# from torchrun's environment variables.
DEIT_MAIN = """
import argparse
import torch
import utils


def main(args):
    utils.init_distributed_mode(args)
    model = torch.nn.Linear(4, 1).to(args.device)
    if args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in data:
        model(x).sum().backward()
        opt.step()


if __name__ == "__main__":
    args = argparse.ArgumentParser().parse_args()
    main(args)
"""

DEIT_UTILS = """
import os


def init_distributed_mode(args):
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        args.distributed = True
        return
    args.distributed = False
"""


def test_unconditional_process_group_and_ddp_keep_the_safe_launch():
    (f,) = findings(UNCONDITIONAL, "XLA204")
    assert f.fix.safe, f.message
    assert "torch_xla.launch(_mp_fn, args=(args,))" in fixed(UNCONDITIONAL, "XLA204")


def test_ddp_behind_a_flag_set_by_a_sibling_helper_reading_torchrun_env_is_review(tmp_path):
    (tmp_path / "utils.py").write_text(src(DEIT_UTILS))
    script = tmp_path / "main.py"
    script.write_text(src(DEIT_MAIN))
    result = analyze(src(DEIT_MAIN), str(script))
    (f,) = [x for x in result.findings if x.code == "XLA204"]
    assert not f.fix.safe
    reason = f.fix.review_reason
    assert reason.startswith("the replicas would train independently")
    assert "if args.distributed" in reason and "utils.init_distributed_mode()" in reason
    assert "torchrun's environment" in reason and reason in f.message
    assert fixed(DEIT_MAIN, "XLA204") == src(DEIT_MAIN)
    assert "torch_xla.launch(_mp_fn" in fixed(DEIT_MAIN, "XLA204", unsafe=True)


def test_ddp_behind_a_flag_of_unknown_origin_is_review():
    # No sibling module on disk: the flag still comes from outside what the launcher sets.
    (f,) = findings(DEIT_MAIN, "XLA204")
    assert not f.fix.safe and "if args.distributed" in f.fix.review_reason


def test_setup_gated_on_environment_variables_in_the_script_is_review():
    code = """
    import os
    import torch
    import torch.distributed as dist


    def setup(args):
        args.distributed = int(os.environ.get("WORLD_SIZE", 1)) > 1
        if not args.distributed:
            return
        dist.init_process_group("nccl")


    def main(args):
        setup(args)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)


    if __name__ == "__main__":
        main(args)
    """
    (f,) = findings(code, "XLA204")
    assert not f.fix.safe
    assert "init_process_group (line 10)" in f.fix.review_reason
    assert "torchrun's environment" in f.fix.review_reason


def test_training_without_any_gradient_all_reduce_is_review():
    code = """
    import torch
    import torch.distributed as dist


    def main():
        dist.init_process_group("nccl")
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            model(x).sum().backward()
            opt.step()


    if __name__ == "__main__":
        main()
    """
    (f,) = findings(code, "XLA204")
    assert not f.fix.safe and "all-reduces the gradients" in f.fix.review_reason


def test_ddp_in_a_local_helper_called_unconditionally_stays_safe():
    code = """
    import torch
    import torch.distributed as dist


    def setup():
        dist.init_process_group("nccl")
        return torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))


    def main():
        model = setup()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)


    if __name__ == "__main__":
        main()
    """
    (f,) = findings(code, "XLA204")
    assert f.fix.safe, f.message


def test_a_test_whose_both_branches_wrap_and_an_evaluate_exit_do_not_gate():
    code = """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    def main(args):
        dist.init_process_group("nccl")
        model = torch.nn.Linear(4, 1)
        if args.gpu is not None:
            model = DDP(model, device_ids=[args.gpu])
        else:
            model = DDP(model)
        if args.evaluate:
            validate(model)
            return
        sampler = torch.utils.data.DistributedSampler(data)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)


    if __name__ == "__main__":
        main(args)
    """
    (f,) = findings(code, "XLA204")
    assert f.fix.safe, f.message


def test_an_all_reduce_of_a_metric_is_not_gradient_averaging():
    code = """
    import torch
    import torch.distributed as dist


    def main():
        dist.init_process_group("nccl")
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(x).sum()
        loss.backward()
        opt.step()
        dist.all_reduce(loss)


    if __name__ == "__main__":
        main()
    """
    (f,) = findings(code, "XLA204")
    assert not f.fix.safe and "all-reduces the gradients" in f.fix.review_reason
    manual = code.replace(
        "dist.all_reduce(loss)", "for p in model.parameters():\n            dist.all_reduce(p.grad)"
    )
    (g,) = findings(manual, "XLA204")
    assert g.fix.safe, g.message


def test_ddp_in_the_init_of_a_trainer_class_the_entry_builds_stays_safe():
    # pytorch/examples ddp-tutorial-series multigpu_torchrun.py.
    code = """
    import torch
    from torch.distributed import init_process_group
    from torch.nn.parallel import DistributedDataParallel as DDP


    class Trainer:
        def __init__(self, model, optimizer):
            self.model = DDP(model)
            self.optimizer = optimizer

        def train(self):
            self.optimizer.step()


    def main(epochs):
        init_process_group(backend="nccl")
        model = torch.nn.Linear(4, 1)
        Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1)).train()


    if __name__ == "__main__":
        main(epochs)
    """
    (f,) = findings(code, "XLA204")
    assert f.fix.safe, f.message


def test_the_ddp_gate_is_named_before_a_sampler_choice():
    # DeiT: RASampler or DistributedSampler is a data choice; the DDP behind the flag is the
    # reason the replicas would not cooperate.
    code = DEIT_MAIN.replace(
        "    model = torch.nn.Linear",
        "    sampler = RASampler(d) if args.aug else torch.utils.data.DistributedSampler(d)\n"
        "    model = torch.nn.Linear",
    )
    (f,) = findings(code, "XLA204")
    assert "DistributedDataParallel (line 11)" in f.fix.review_reason, f.fix.review_reason
    assert "out of the analysis's sight" in f.fix.review_reason


SENTINEL = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def main():
    ddp = int(os.environ.get("RANK", -1)) != -1
    if ddp:
        dist.init_process_group(backend="nccl")
    model = torch.nn.Linear(4, 1)
    if ddp:
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        model(torch.randn(8, 4)).sum().backward()
        opt.step()

if __name__ == "__main__":
    main()
"""


def test_a_torchrun_sentinel_that_xla202_rewrites_safely_coordinates_the_replicas():
    # After XLA202's safe fix the gate reads `xr.world_size() > 1`: the launcher's runtime.
    (f,) = findings(SENTINEL, "XLA204")
    assert f.fix is not None and f.fix.safe, f.message
    # With XLA202's fix turned off the gate still reads torchrun's environment.
    silenced = SENTINEL.replace("!= -1\n", "!= -1  # xla-lens: ignore[XLA202]\n")
    (f,) = findings(silenced, "XLA204")
    assert not f.fix.safe and "train independently" in f.fix.review_reason


def test_replica_code_that_needs_torchruns_environment_waits_for_review():
    # pytorch/examples ddp example: {k: os.environ[k] for k in ("RANK", ...)} raises KeyError
    # in every replica the XLA launcher starts (fresh held-out probe).
    code = """
    import os
    import torch.distributed as dist

    def main():
        env = {key: os.environ[key] for key in ("MASTER_ADDR", "RANK", "WORLD_SIZE")}
        rank = int(env["RANK"])
        dist.init_process_group(backend="nccl")
        print(rank)

    if __name__ == "__main__":
        main()
    """
    (f,) = findings(code, "XLA204")
    # Every replica would raise: the launch is not offered, even for review.
    assert f.fix is None and "KeyError" in f.message and "KeyError" in f.manual
    assert "line 5" in f.message


def test_a_read_guarded_by_membership_raises_nothing():
    """SwinUNETR's pretraining (held-out 101): ``if "WORLD_SIZE" in os.environ:`` guards the
    read, so under the XLA launcher the script runs on, one process's world, not a KeyError;
    the reason then says what does happen."""
    code = """
    import os
    import torch.distributed as dist

    def main():
        distributed = False
        if "WORLD_SIZE" in os.environ:
            distributed = int(os.environ["WORLD_SIZE"]) > 1
        size = int(os.environ["RANK"]) if "RANK" in os.environ else 0
        if distributed:
            dist.init_process_group(backend="nccl")
        print(size)

    if __name__ == "__main__":
        main()
    """
    (f,) = findings(code, "XLA204")
    assert "KeyError" not in f.message and f.fix is not None


# A process group and a training loop, nothing of the script's own all-reduces the gradients.
NO_REDUCTION = """
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("nccl")
    print("gpus:", torch.cuda.device_count())
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in data:
        model(x).sum().backward()
        {step}


if __name__ == "__main__":
    main()
"""


def test_xla105s_optimizer_step_is_not_the_scripts_own_coordination():
    # XLA105's safe fix writes xm.optimizer_step; it does not tell how the author meant the
    # replicas to cooperate (under torchrun they trained independently): the launch waits
    # for review in every order, so plain `fix` never launches what `check` called review.
    (before,) = findings(NO_REDUCTION.format(step="opt.step()"), "XLA204")
    assert not before.fix.safe
    after = NO_REDUCTION.format(step="xm.optimizer_step(opt)").replace(
        "import torch\n", "import torch\nimport torch_xla.core.xla_model as xm\n", 1
    )
    (f,) = findings(after, "XLA204")
    assert not f.fix.safe, f.message
    assert "xm.optimizer_step (line 13)" in f.fix.review_reason
    assert "XLA105" in f.fix.review_reason
    assert "torch_xla.launch" not in fixed(NO_REDUCTION.format(step="opt.step()"), None)


TEACHER_STUDENT = """
import torch
import torch.distributed as dist
import torch.nn as nn


def train(args):
    dist.init_process_group(backend="nccl", init_method="env://")
    student = nn.Linear(4, 4).cuda()
    teacher = nn.Linear(4, 4).cuda()
    if any(isinstance(m, nn.BatchNorm1d) for m in student.modules()):
        teacher = nn.parallel.DistributedDataParallel(teacher)
    student = nn.parallel.DistributedDataParallel(student)
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    for _ in range(3):
        loss = student(torch.ones(8, 4).cuda()).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()


class Options:
    lr = 0.1


if __name__ == "__main__":
    train(Options())
"""


def test_a_wrapper_under_a_condition_beside_one_that_always_runs_is_no_independence():
    # held-out 10 r5 (DINO: the teacher is wrapped only with batch norms, the student always).
    (f,) = findings(TEACHER_STUDENT, "XLA204")
    assert f.fix is not None and f.fix.safe, f.fix.review_reason


def test_launch_args_defined_in_the_main_block_cannot_reach_the_processes():
    # torch_xla.launch pickles args=(...): a class of the main block is not in __mp_main__.
    code = TEACHER_STUDENT.replace("\n\nclass Options:\n    lr = 0.1\n", "").replace(
        'if __name__ == "__main__":\n',
        'if __name__ == "__main__":\n    class Options:\n        lr = 0.1\n',
    )
    (f,) = findings(code, "XLA204")
    assert not f.fix.safe and "`Options`, defined there" in f.fix.review_reason


def test_a_group_started_by_a_sibling_module_is_named_in_the_review(tmp_path):
    # held-out 10 re-measure w2 (DINO's utils.init_distributed_mode through `import utils`):
    # "no init_process_group in reach" was untrue; the launch stays for review, saying where.
    (tmp_path / "helpers.py").write_text(
        'import torch.distributed as dist\n\n\ndef init_dist():\n    dist.init_process_group(backend="nccl")\n',
        encoding="utf-8",
    )
    script = tmp_path / "train.py"
    script.write_text(
        src(
            """
            import argparse
            import torch
            import torch.nn as nn
            import helpers


            def train(args):
                helpers.init_dist()
                model = nn.parallel.DistributedDataParallel(nn.Linear(4, 1).cuda())
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                for _ in range(3):
                    loss = model(torch.ones(8, 4, device="cuda")).sum()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()


            if __name__ == "__main__":
                train(argparse.Namespace())
            """
        ),
        encoding="utf-8",
    )
    result = analyze(script.read_text(), str(script))
    (f,) = [f for f in result.findings if f.code == "XLA204"]
    assert not f.fix.safe and "started by init_dist() (helpers.py:5)" in f.fix.review_reason


def test_a_helper_not_handed_the_flag_holder_is_not_said_to_set_it(tmp_path):
    # Held-out 59's BERT-NER: seed_everything(args.seed) of another module writes
    # os.environ["PYTHONHASHSEED"]; it was named as what set the DDP gate.
    (tmp_path / "utils.py").write_text(
        src(DEIT_UTILS)
        + '\n\ndef seed_everything(seed):\n    os.environ["PYTHONHASHSEED"] = str(seed)\n'
    )
    main = DEIT_MAIN.replace(
        "utils.init_distributed_mode(args)", "utils.seed_everything(args.seed)"
    )
    script = tmp_path / "main.py"
    script.write_text(src(main))
    (f,) = [x for x in analyze(src(main), str(script)).findings if x.code == "XLA204"]
    assert "seed_everything" not in f.fix.review_reason
    assert "set out of the analysis's sight" in f.fix.review_reason


def test_membership_guards_of_an_environment_read():
    from xla_lens.engine.analysis import parse
    from xla_lens.rules.parts.env_sentinel import membership_guarded

    code = src("""
    import os
    if "WORLD_SIZE" in os.environ:
        a = int(os.environ["WORLD_SIZE"])
    b = int(os.environ["RANK"]) if "RANK" in os.environ else 0
    c = 0 if "RANK" in os.environ else int(os.environ["RANK"])
    d = int(os.environ["LOCAL_RANK"]) if "RANK" in os.environ else 0
    e = os.environ["RANK"]
    """)
    model = parse(code)
    reads = [n for n in model.nodes_of(ast.Subscript) if model.qualname(n.value) == "os.environ"]
    assert [membership_guarded(model, r) for r in reads] == [True, True, False, False, False]


def test_a_flag_set_from_a_rank_option_names_the_line_and_its_default():
    # held-out 140 (HRNet's segmentation trainer): `distributed = args.local_rank >= 0`, the
    # option -1 by default; torch.distributed.launch passed it, torch_xla.launch passes none.
    code = UNCONDITIONAL.replace(
        '    dist.init_process_group("nccl")\n    model = DDP(torch.nn.Linear(4, 1).to(dist.get_rank()))\n',
        "    distributed = args.local_rank >= 0\n"
        "    model = torch.nn.Linear(4, 1)\n"
        "    if distributed:\n"
        '        dist.init_process_group("nccl")\n'
        "        model = DDP(model.to(dist.get_rank()))\n",
    )
    assert "if distributed:" in code
    (f,) = findings(code, "XLA204")
    assert not f.fix.safe
    assert "set on line 8 (`args.local_rank >= 0`) from a rank option" in f.fix.review_reason


def test_a_flag_set_from_a_command_line_option_is_named_as_such():
    # held-out 177 (KAIR): `opt = option.parse(...)` then `opt['dist'] =
    # parser.parse_args().dist`; the review said a helper reading torchrun's environment set it.
    code = UNCONDITIONAL.replace(
        '    dist.init_process_group("nccl")\n    model = DDP(torch.nn.Linear(4, 1).to(dist.get_rank()))\n',
        "    opt = dict(lr=0.1)\n"
        "    opt['dist'] = parser.parse_args().dist\n"
        "    model = torch.nn.Linear(4, 1)\n"
        "    if opt['dist']:\n"
        '        dist.init_process_group("nccl")\n'
        "        model = DDP(model.to(dist.get_rank()))\n",
    ).replace("def main(args):", "parser = argparse.ArgumentParser()\n\n\ndef main(args):")
    (f,) = findings(code, "XLA204")
    assert not f.fix.safe
    reason = f.fix.review_reason
    assert "set on line 12 from a command-line option (`parser.parse_args().dist`)" in reason
    assert "another module" not in reason
