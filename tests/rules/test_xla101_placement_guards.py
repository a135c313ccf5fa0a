"""XLA101: a picker rewrite is safe only when no other code still decides placement by CUDA
availability (held-out issue: the model stayed on the CPU, the inputs went to XLA)."""

from tests.helpers import findings, fixed


def _pickers(code: str):
    return [f for f in findings(code, "XLA101") if f.fix is not None]


def test_flag_guarding_a_move_is_made_true_with_the_picker():
    code = """
    import torch
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    model = torch.nn.Linear(4, 1)
    if use_cuda:
        model = model.to(device)
    """
    (f,) = _pickers(code)
    assert f.fix.safe and "use_cuda = True" in f.fix.title
    out = fixed(code, "XLA101")
    assert "use_cuda = True\ndevice = torch_xla.device()\n" in out
    assert "if use_cuda:\n    model = model.to(device)\n" in out


def test_accelerator_if_picker_and_its_flag_move_together():
    code = """
    import torch
    use_accel = torch.accelerator.is_available()
    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    model = torch.nn.Linear(4, 1)
    if use_accel:
        model.to(device)
    if not use_accel:
        print("training on the CPU, this will be slow")
    """
    (f,) = _pickers(code)
    assert f.fix.safe
    out = fixed(code, "XLA101")
    assert "use_accel = True\ndevice = torch_xla.device()\n" in out


def test_a_picker_read_only_by_harmless_code_keeps_its_flag():
    code = """
    import torch
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    kwargs = {"num_workers": 1, "pin_memory": True} if use_cuda else {}
    if use_cuda:
        torch.backends.cudnn.benchmark = True
    """
    (f,) = _pickers(code)
    assert f.fix.safe and "use_cuda = True" not in f.fix.title
    assert "use_cuda = torch.cuda.is_available()\n" in fixed(code, "XLA101")


def test_flag_that_also_switches_on_cuda_calls_makes_the_picker_review():
    code = """
    import torch
    use_accel = torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    model = torch.nn.Linear(4, 1)
    if use_accel:
        torch.accelerator.set_device_index(0)
        model.to(device)
    """
    (f,) = _pickers(code)
    assert not f.fix.safe
    assert "use_accel (False on an XLA host) also decides line 5" in f.fix.review_reason
    assert "review" in f.message
    assert "use_accel = torch.accelerator.is_available()\n" in fixed(code, "XLA101")


def test_direct_availability_guard_of_a_move_makes_the_picker_review():
    code = """
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Linear(4, 1)
    if torch.cuda.is_available():
        model = model.to(device)
    """
    (f,) = _pickers(code)
    assert not f.fix.safe
    assert "line 4 `if torch.cuda.is_available():` still decides by CUDA" in f.fix.review_reason


def test_device_type_compared_with_cuda_is_a_use_where_the_original_matters():
    code = """
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(4, 1)
    if device.type == "cuda":
        model = model.to(device)
    if device.type != "cuda":
        print("cpu")
    """
    (f,) = _pickers(code)
    assert not f.fix.safe
    assert '.type compared with "cuda"' in f.fix.review_reason


def test_device_type_compared_with_cpu_decides_as_on_a_cuda_host():
    code = """
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(4, 1)
    if device.type != "cpu":
        model = model.to(device)
    """
    (f,) = _pickers(code)
    assert f.fix.safe


def test_inline_flag_and_availability_test_keeps_only_the_flag():
    code = """
    import argparse
    import torch
    p = argparse.ArgumentParser()
    p.add_argument("--accel", action="store_true")
    args = p.parse_args()
    if args.accel and torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    model = torch.nn.Linear(2, 2).to(device)
    """
    (f,) = _pickers(code)
    assert f.fix.safe
    out = fixed(code, "XLA101")
    assert "if args.accel:\n    device = torch_xla.device()\nelse:\n" in out


def test_inline_flag_branch_with_an_accelerator_call_is_review():
    code = """
    import torch
    if args.accel and torch.accelerator.is_available():
        torch.accelerator.set_device_index(0)
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    """
    (f,) = _pickers(code)
    assert not f.fix.safe and "set_device_index" in f.fix.review_reason


def test_int_index_also_read_as_a_number_gets_no_rewrite():
    code = """
    import torch
    def main_worker(gpu, args):
        args.gpu = gpu
        if args.gpu is not None:
            print("Use GPU: {} for training".format(args.gpu))
        loc = f"cuda:{args.gpu}"
        return torch.load("ckpt.pth", map_location=loc)
    """
    (f,) = [f for f in findings(code, "XLA101") if "device number" in f.message]
    assert f.fix is None and f.manual
    assert "tested for None" in f.message
    assert "args.gpu = gpu\n" in fixed(code, "XLA101", unsafe=True)


def test_int_index_used_only_as_a_device_is_still_rewritten():
    code = """
    import torch
    def main(rank):
        device = rank % torch.cuda.device_count()
        model = torch.nn.Linear(2, 2).to(device)
    """
    # The index, and the model placed with it (same fix).
    assert [f.fix is not None and f.fix.safe for f in findings(code, "XLA101")] == [True, True]


def test_picker_returned_by_a_helper_of_another_workspace_module_is_reported(tmp_path):
    from xla_lens.engine import analyze
    from xla_lens.semantic.workspace import clear_cache

    clear_cache()
    root = tmp_path / "proj"
    (root / "mypkg").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "mypkg" / "common.py").write_text(
        "import torch\n\n"
        "def autodetect_device_type():\n"
        "    if torch.cuda.is_available():\n"
        '        device_type = "cuda"\n'
        "    else:\n"
        '        device_type = "cpu"\n'
        "    return device_type\n"
    )
    script = root / "scripts" / "train.py"
    code = (
        "import argparse\n"
        "import torch\n"
        "from mypkg.common import autodetect_device_type\n"
        "p = argparse.ArgumentParser()\n"
        'p.add_argument("--device-type", type=str, default="", help="cuda|cpu|mps")\n'
        "args = p.parse_args()\n"
        'device_type = autodetect_device_type() if args.device_type == "" else args.device_type\n'
        "model = torch.nn.Linear(2, 2).to(device_type)\n"
    )
    script.write_text(code)
    found = {
        f.span.start.line + 1: f for f in analyze(code, str(script)).findings if f.code == "XLA101"
    }
    helper, option = found[7], found[5]
    assert helper.fix is None and helper.manual
    assert "../mypkg/common.py:4" in helper.message
    assert option.fix is None and "--device-type" in option.message


def test_user_flag_that_also_sets_the_accelerator_index_is_review():
    code = """
    import torch
    use_accel = not args.no_accel and torch.accelerator.is_available()
    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    model = torch.nn.Linear(2, 2)
    if use_accel:
        torch.accelerator.set_device_index(0)
        model.to(device)
    """
    (f,) = _pickers(code)
    assert not f.fix.safe and "use_accel also decides other code (line 8)" in f.fix.review_reason
    assert "and torch.accelerator.is_available()" in fixed(code, "XLA101")


def test_a_block_only_several_gpus_run_does_not_hold_the_picker_back():
    # A one-GPU CUDA host skips it too: nothing the device needs happens there.
    code = """
    import torch
    from torch import nn
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    n_gpu = torch.cuda.device_count()
    model = nn.Linear(2, 2)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    if n_gpu >= 2 and True:
        model = nn.DataParallel(model)
    model.to(device)
    """
    (f,) = _pickers(code)
    assert f.fix.safe


def test_a_block_any_gpu_runs_still_holds_the_picker_back():
    code = """
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(2, 2)
    if torch.cuda.device_count() > 0:
        model.to(device)
    """
    (f,) = _pickers(code)
    assert not f.fix.safe


def test_a_dtype_chosen_by_availability_does_not_hold_the_picker_back():
    code = """
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
    model = torch.nn.Linear(2, 2).to(device, dtype)
    """
    (f,) = _pickers(code)
    assert f.fix.safe


def test_a_second_picker_on_the_flag_keeps_the_flag_from_becoming_true_safely():
    # With use_cuda = True and the second picker's fix not applied, it would pick "cuda".
    code = """
    import torch
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    eval_device = "cuda" if use_cuda else "cpu"
    model = torch.nn.Linear(2, 2)
    if use_cuda:
        model = model.to(device)
    """
    found = _pickers(code)
    assert found and not any(f.fix.safe for f in found)
    assert "use_cuda = torch.cuda.is_available()\n" in fixed(code, "XLA101")


def test_a_hasattr_test_on_a_torch_setting_is_not_an_availability_guard():
    # Held-out 11 (llm.c): `hasattr(config, "coordinate_descent_tuning")` on torch._inductor's
    # config was named as a test that "still decides by CUDA availability".
    code = """
    import torch
    import torch._inductor.config as config

    device = "cpu"
    if torch.cuda.is_available():
        device = "cuda"
    elif hasattr(torch.backends, "mps") and torch.backends.mps.is_available():
        device = "mps"
    model = torch.nn.Linear(4, 1).to(device)
    if hasattr(config, "coordinate_descent_tuning"):
        config.coordinate_descent_tuning = True
        model = model.to(device)
    """
    for f in findings(code, "XLA101"):
        assert "coordinate_descent_tuning" not in f.message, f.message
