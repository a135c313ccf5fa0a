import ast

from xla_lens.engine import fix_source

from tests.helpers import findings, fixed, src


def test_cuda_device_forms_are_found_and_fixed_modern():
    code = """
    import torch
    import torch.nn as nn  # keep me

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(2, 2).cuda()
    x = torch.zeros(3, device="cuda")
    y = x.to("cuda:0")
    """
    found = findings(code, "XLA101")
    assert [f.span.start.line for f in found] == [3, 4, 5, 6]
    assert fixed(code, "XLA101") == src(
        """
        import torch
        import torch.nn as nn  # keep me
        import torch_xla

        device = torch_xla.device()
        model = nn.Linear(2, 2).to(device)
        x = torch.zeros(3, device=device)
        y = x.to(device)
        """
    )


def test_legacy_target_uses_xla_device_and_existing_alias():
    code = """
    import torch
    import torch_xla.core.xla_model as X

    dev = torch.device("cuda:0")
    """
    assert "dev = X.xla_device()" in fixed(code, "XLA101", target="legacy")


def test_is_available_if_picker_becomes_one_assignment():
    code = """
    import torch
    if torch.cuda.is_available():
        device = "cuda"
    else:
        device = "cpu"
    """
    out = fixed(code, "XLA101")
    assert "device = torch_xla.device()" in out
    assert "is_available" not in out


def test_converted_code_and_cpu_code_report_nothing():
    code = """
    import torch
    import torch_xla
    device = torch_xla.device()
    cpu = torch.device("cpu")
    t = torch.zeros(2, device=device).to(device)
    """
    assert findings(code, "XLA101") == []


def test_non_ascii_columns_are_code_points():
    code = 'import torch\nnom_é = "ü"; t = torch.zeros(1, device="cuda")\n'
    (f,) = findings(code, "XLA101")
    line = code.splitlines()[1]
    assert line[f.span.start.col : f.span.end.col] == '"cuda"'


# --- real-script idioms (GUIDE.md section I) -------------------------------------------
def _unsafe_fixed(text: str) -> str:
    out = fix_source(src(text), accept=lambda f: f.code == "XLA101", unsafe=True)
    assert out.error is None
    ast.parse(out.source)
    return out.source


def _only(text: str):
    (f,) = findings(text, "XLA101")
    return f


def test_argparse_default_cuda_becomes_xla_when_every_use_takes_a_device():
    code = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda:0")
    args = parser.parse_args()
    model = torch.nn.Linear(2, 2).to(args.device)
    x = torch.zeros(2, device=torch.device(args.device))
    """
    assert _only(code).fix.safe
    assert 'parser.add_argument("--device", default="xla")' in fixed(code, "XLA101")
    assert "import torch_xla\n" in fixed(code, "XLA101")


def test_argparse_default_used_as_a_string_is_only_offered_for_review():
    code = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=str, default="cuda:0" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    device_type = "cuda" if "cuda" in args.device else "cpu"
    """
    f = _only(code)
    assert not f.fix.safe and "compared as a string" in f.fix.review_reason
    assert "line 6" in f.fix.review_reason and "review" in f.message
    assert fixed(code, "XLA101") == src(code)
    assert 'default="xla")' in _unsafe_fixed(code)


def test_cpu_default_with_cuda_in_the_help_is_a_reviewed_fix():
    code = """
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=str, default="cpu", help="cpu|cuda|mps")
    """
    f = _only(code)
    assert not f.fix.safe and "defaults to the CPU" in f.fix.review_reason


def test_trainer_attribute_is_followed_across_methods():
    code = """
    import torch
    class Trainer:
        def __init__(self, model):
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
            self.model = model.to(self.device)
        def step(self, x):
            return self.model(x.to(self.device))
    """
    assert _only(code).fix.safe
    assert "        self.device = torch_xla.device()\n" in fixed(code, "XLA101")


def test_attribute_used_as_autocast_device_type_is_a_trap():
    code = """
    import torch
    class Trainer:
        def __init__(self, model):
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
            self.model = model.to(self.device)
        def step(self, x):
            with torch.autocast(device_type=self.device, dtype=torch.bfloat16):
                return self.model(x)
    """
    f = _only(code)
    assert not f.fix.safe and "device-type string" in f.fix.review_reason
    assert fixed(code, "XLA101") == src(code)
    # For review: the str stays a str, so string uses keep working.
    assert '        self.device = "xla"\n' in _unsafe_fixed(code)


def test_guarded_assignment_rewrites_the_whole_picker_and_keeps_comments():
    code = """
    import torch
    device = "cpu"
    if torch.cuda.is_available():
        # fastest
        device = "cuda"
    elif torch.backends.mps.is_available():
        device = "mps"
    model = torch.nn.Linear(2, 2).to(device)
    print(f"using {device}")
    """
    assert _only(code).fix.safe
    out = fixed(code, "XLA101")
    assert 'device = "cpu"\ndevice = torch_xla.device()  # fastest\nmodel' in out
    assert "is_available" not in out


def test_guarded_picker_with_a_string_use_is_a_reviewed_fix():
    code = """
    import torch
    device = "cpu"
    if torch.cuda.is_available():
        device = "cuda"
    device_type = "cuda" if device.startswith("cuda") else "cpu"
    """
    f = _only(code)
    assert not f.fix.safe and "startswith" in f.fix.review_reason
    assert fixed(code, "XLA101") == src(code)


def test_picker_block_that_runs_other_code_is_a_reviewed_fix():
    code = """
    import torch
    if torch.cuda.is_available():
        device = "cuda"
        n_workers = 4
    else:
        device = "cpu"
        n_workers = 0
    """
    f = _only(code)
    assert not f.fix.safe
    assert "the CUDA branch's other statements now run on every host: n_workers = 4" in (
        f.fix.review_reason
    )
    assert "the other branch's statements no longer run: n_workers = 0" in f.fix.review_reason
    # The accelerator branch's work stays (ParallelWaveGAN's process group, held-out 36).
    out = fixed(code, "XLA101", unsafe=True)
    assert "n_workers = 4" in out and "n_workers = 0" not in out and "if torch" not in out


def test_accelerator_pickers():
    code = """
    import torch
    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    model = torch.nn.Linear(2, 2).to(device)
    """
    assert "device = torch_xla.device()\n" in fixed(code, "XLA101")
    code = """
    import torch
    device = torch.accelerator.current_accelerator()
    model = torch.nn.Linear(2, 2).to(device)
    """
    assert "device = torch_xla.device()\n" in fixed(code, "XLA101")


def test_accelerator_flag_name_keeps_the_users_flag():
    code = """
    import torch
    use_accel = not args.no_accel and torch.accelerator.is_available()
    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    model = torch.nn.Linear(2, 2).to(device)
    """
    assert _only(code).fix.safe
    out = fixed(code, "XLA101")
    assert "use_accel = not args.no_accel\nif use_accel:\n    device = torch_xla.device()" in out


def test_flag_name_that_also_decides_other_code_is_a_reviewed_fix():
    code = """
    import torch
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    timer = torch.cuda.Event(enable_timing=True) if use_cuda else None
    """
    f = _only(code)
    assert not f.fix.safe and "use_cuda also decides" in f.fix.review_reason
    # What a CUDA host runs anyway, and nothing there needs CUDA: the flag may turn it on.
    ok = code.replace("torch.cuda.Event(enable_timing=True)", '{"pin_memory": True}')
    assert _only(ok).fix.safe


def test_flag_pickers_keep_the_flag():
    code = """
    import torch
    opt.cuda = not opt.no_cuda
    device = torch.device("cuda" if opt.cuda else "cpu")
    dev2 = torch.device("cuda" if args.cuda and torch.cuda.is_available() else "cpu")
    """
    out = fixed(code, "XLA101")
    assert 'device = torch.device("xla" if opt.cuda else "cpu")' in out
    assert 'dev2 = torch.device("xla" if args.cuda else "cpu")' in out


def test_string_chain_with_string_uses_is_a_trap():
    code = """
    import torch
    def train():
        device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
        if device == "cuda":
            print("gpu")
        device = torch.device(device)
    """
    f = _only(code)
    assert not f.fix.safe and "compared as a string" in f.fix.review_reason
    assert '    device = "xla"\n' in _unsafe_fixed(code)


def test_module_global_is_checked_in_every_function_that_reads_it():
    code = """
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    def train(model):
        model.to(device)
    def report():
        return f"{device}:0"
    """
    f = _only(code)
    assert not f.fix.safe and "formatted into a string" in f.fix.review_reason
    code_ok = code.replace('return f"{device}:0"', 'print(f"device {device}")')
    assert _only(code_ok).fix.safe


def test_local_shadowing_a_global_is_not_a_use_of_it():
    code = """
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    def check(device="cpu"):
        return device == "cpu"
    """
    assert _only(code).fix.safe


def test_helper_returning_the_device_is_followed_to_its_callers():
    code = """
    import torch
    def get_device():
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    def train(model, device):
        model.to(device)
    def main():
        device = get_device()
        train(torch.nn.Linear(2, 2), device)
    """
    assert _only(code).fix.safe
    assert "    return torch_xla.device()\n" in fixed(code, "XLA101")
    bad = code.replace("model.to(device)", 'model.to(device)\n        assert "cuda" in device')
    assert not _only(bad).fix.safe


def test_device_passed_out_of_reach_is_a_reviewed_fix():
    code = """
    import torch
    from engine import evaluate
    device = "cuda" if torch.cuda.is_available() else "cpu"
    evaluate(None, device)
    """
    f = _only(code)
    assert not f.fix.safe and "evaluate()" in f.fix.review_reason


def test_integer_indices_use_the_device_variable_in_scope():
    code = """
    import torch
    def run(local_rank):
        device = torch.device(f"cuda:{local_rank}")
        x = torch.zeros(2).to(local_rank)
        y = torch.zeros(2).cuda(local_rank)
    def other(local_rank):
        z = torch.zeros(2).to(local_rank)
    """
    found = findings(code, "XLA101")
    assert [f.fix.safe for f in found] == [True, True, True, False]
    assert "no device variable" in found[3].fix.review_reason
    out = fixed(code, "XLA101")
    assert "    device = torch_xla.device()\n    x = torch.zeros(2).to(device)\n" in out
    assert "    y = torch.zeros(2).to(device)\n" in out
    assert "    z = torch.zeros(2).to(local_rank)\n" in out


def test_format_string_device_and_set_device_use():
    code = """
    import torch
    def run(rank):
        device = torch.device('cuda:{:d}'.format(rank))
        torch.cuda.set_device(device)
    """
    f = _only(code)
    assert not f.fix.safe and "torch.cuda.set_device" in f.fix.review_reason


def test_device_type_derivations_are_uses_not_pickers():
    code = """
    import torch
    device = "cpu"
    device_type = "cuda" if "cuda" in device else "cpu"
    """
    assert findings(code, "XLA101") == []


def test_placement_under_an_availability_guard_is_a_reviewed_fix():
    code = """
    import torch
    model = torch.nn.Linear(2, 2)
    if torch.cuda.is_available():
        model.cuda()
    if not torch.cuda.is_available():
        print("cpu")
    else:
        batch = torch.zeros(2).to("cuda")
    """
    found = findings(code, "XLA101")
    assert len(found) == 2 and not any(f.fix.safe for f in found)
    assert all("availability test" in f.fix.review_reason for f in found)
    assert fixed(code, "XLA101") == src(code)


def test_cuda_flag_from_availability_is_reported_without_a_fix():
    code = """
    import torch
    cuda = True if torch.cuda.is_available() else False
    model = torch.nn.Linear(2, 2)
    if cuda:
        model.cuda()
        torch.backends.cudnn.benchmark = True
    """
    found = findings(code, "XLA101")
    flag = [f for f in found if f.fix is None]
    assert len(flag) == 1 and "line 4" in flag[0].message and flag[0].manual


def test_int_device_from_device_count():
    code = """
    import torch
    def main(rank):
        device = rank % torch.cuda.device_count()
        model = torch.nn.Linear(2, 2).to(device)
    """
    index, move = findings(code, "XLA101")
    assert index.fix.safe and (index.span.start.line, move.span.start.line) == (2, 3)
    # The model's placement is reported too, with the index's own fix (one edit).
    assert move.fix.ops == index.fix.ops and move.fix.safe
    assert "    device = torch_xla.device()\n" in fixed(code, "XLA101")


def test_device_keyword_into_a_local_function_is_followed():
    code = """
    import torch
    def train(model, device):
        if device == "cuda":
            model.half()
    def main():
        device = "cuda" if torch.cuda.is_available() else "cpu"
        train(model=None, device=device)
    """
    f = _only(code)
    assert not f.fix.safe and "compared as a string" in f.fix.review_reason


def test_device_from_a_helper_in_another_module_is_reported_without_a_fix():
    code = """
    import torch
    from . import dist_util
    from utils import select_device

    def step(batch):
        x = batch.to(dist_util.dev())
        y = batch.to(select_device())
        z = torch.zeros(2).to(torch.device("cpu"))
    """
    found = findings(code, "XLA101")
    assert [f.span.start.line for f in found] == [5, 6]
    assert all(f.fix is None and "torch_xla.device()" in f.manual for f in found)


def test_more_cuda_index_spellings():
    code = """
    import torch
    def run(rank):
        device = torch.device("cuda:%d" % rank)
        dev2 = "cuda:" + str(rank)
        model = torch.nn.Linear(2, 2).to(device)
        x = torch.zeros(2).to(dev2)
        y = torch.zeros(2).to(torch.cuda.current_device())
    """
    out = fixed(code, "XLA101")
    assert "    device = torch_xla.device()\n    dev2 = torch_xla.device()\n" in out
    assert "    y = torch.zeros(2).to(device)\n" in out


def test_pytorch_examples_flags_switch_on_what_a_cuda_host_runs():
    code = """
    import torch
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    torch.manual_seed(1)
    if use_cuda:
        device = torch.device("cuda")
    else:
        device = torch.device("cpu")
    train_kwargs = {"batch_size": 8}
    if use_cuda:
        train_kwargs.update({"num_workers": 1, "pin_memory": True, "shuffle": True})
    """
    f = _only(code)
    assert f.fix.safe
    out = fixed(code, "XLA101")
    assert "use_cuda = not args.no_cuda\n" in out and "    device = torch_xla.device()\n" in out
    risky = code.replace(
        'train_kwargs.update({"num_workers": 1, "pin_memory": True, "shuffle": True})',
        "torch.cuda.set_device(0)",
    )
    assert not _only(risky).fix.safe


def test_a_device_passed_to_a_method_of_an_instance_of_this_scripts_class_is_followed():
    code = """
    import torch

    class Sampler:
        def __init__(self, model):
            self.model = model

        def sample(self, n, device):
            return self.model(torch.randn(n, 4).to(device))

    device = "cuda:0"
    sampler = Sampler(model)
    out = sampler.sample(8, device)
    """
    (f,) = findings(code, "XLA101")
    assert f.fix is not None and f.fix.safe
    assert "device = torch_xla.device()" in fixed(code, "XLA101")
    # A method that uses it as a string keeps the fix for review.
    trap = code.replace(".to(device))", ".to(device)) if device.startswith('cuda') else None")
    (f,) = findings(trap, "XLA101")
    assert not f.fix.safe


def test_cuda_move_under_an_is_cuda_guard_rewrites_the_guard_too():
    # Held-out 21 (a2c-ppo DiagGaussian): XLA tensors answer is_cuda with False, so the
    # converted move alone would never run.
    code = """
    import torch
    def head(h, mean):
        base = torch.zeros(mean.size())
        if h.is_cuda:  # on the accelerator?
            base = base.cuda()
        return base
    """
    (f,) = findings(code, "XLA101")
    assert f.fix is not None and f.fix.safe
    assert "`h.is_cuda`, which is False for XLA tensors" in f.message
    out = fixed(code, "XLA101")
    # The move follows `h` on either device: a project whose model stays on CUDA until its
    # other files are converted keeps working (held-out 159's rnn-transducer decoder).
    assert 'if h.device.type in ("cuda", "xla"):  # on the accelerator?' in out
    assert "base = base.to(h.device)" in out


def test_is_cuda_guard_holding_other_cuda_calls_is_left():
    code = """
    import torch
    def head(h, base):
        if h.is_cuda:
            torch.cuda.synchronize()
            base = base.cuda()
        return base
    """
    out = fixed(code, "XLA101")
    assert "if h.is_cuda:" in out and "base.to(torch_xla.device())" in out


def test_a_picker_on_a_tensors_is_cuda_becomes_the_tensors_device():
    # SupContrast's loss (held-out 25): an XLA tensor answers is_cuda with False, so keeping the
    # test ("the user's choice") would build the masks on the CPU beside the XLA features.
    code = """
    import torch
    def loss(features):
        device = (torch.device('cuda')
                  if features.is_cuda
                  else torch.device('cpu'))
        return torch.eye(4).to(device)
    """
    (f,) = findings(code, "XLA101")
    assert f.fix.safe and "asks whether `features` is on CUDA" in f.message
    assert "the user's choice" not in f.message
    assert "device = (features.device)" in fixed(code, "XLA101")
