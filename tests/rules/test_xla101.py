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
