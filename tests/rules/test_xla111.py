from xla_lens.rules.registry import get_rule

from tests.helpers import findings, fixed, src

CODE = """
import torch

model = torch.compile(model)
fast = torch.compile(model, mode="max-autotune", fullgraph=True)


@torch.compile
def step(x):
    return x * 2


@torch.compile(dynamic=False)
def other(x):
    return x + 1
"""


def test_compile_without_backend_gets_openxla():
    found = findings(CODE, "XLA111")
    assert [f.span.start.line + 1 for f in found] == [3, 4, 7, 12]
    assert all(f.fix is not None and f.fix.safe for f in found)
    assert "KeyError: 'xla'" in found[0].message and "torch_xla.compile" in found[0].message
    assert fixed(CODE, "XLA111") == src(
        """
        import torch

        model = torch.compile(model, backend="openxla")
        fast = torch.compile(model, mode="max-autotune", fullgraph=True, backend="openxla")


        @torch.compile(backend="openxla")
        def step(x):
            return x * 2


        @torch.compile(dynamic=False, backend="openxla")
        def other(x):
            return x + 1
        """
    )


def test_aliases_are_followed():
    code = """
    from torch import compile as tc
    net = tc(net)
    """
    assert fixed(code, "XLA111") == src(
        """
        from torch import compile as tc
        net = tc(net, backend="openxla")
        """
    )


def test_legacy_target_has_no_torch_compile_so_it_is_manual():
    found = findings(CODE, "XLA111", target="legacy")
    assert len(found) == 4
    assert all(f.fix is None and "1.13" in f.manual for f in found)
    assert fixed(CODE, "XLA111", target="legacy") == src(CODE)


def test_a_chosen_backend_xla_compile_and_other_compiles_are_left_alone():
    code = """
    import re
    import torch
    import torch_xla
    from accelerate import Accelerator

    model = torch.compile(model, backend="openxla")
    eager = torch.compile(model, backend="inductor")
    chosen = torch.compile(model, backend=args.backend)
    forwarded = torch.compile(model, **compile_kwargs)
    step = torch_xla.compile(train_step)
    pattern = re.compile("x+")
    accelerator = Accelerator(dynamo_backend="openxla")
    """
    for target in ("modern", "legacy"):
        assert findings(code, "XLA111", target) == []


def test_hover_states_the_measured_failure_and_both_targets():
    text = get_rule("XLA111").hover["torch.compile"]
    assert "KeyError: 'xla'" in text and "openxla" in text
    assert "modern" in text and "legacy" in text and "torch_xla.compile" in text


def test_the_backend_waits_for_review_while_the_device_change_does():
    # held-out 10 (SRGAN): openxla over tensors left on CUDA runs the model uncompiled,
    # silently; the device picker here needs review (set_device in its block).
    code = """
    import torch

    def build():
        if torch.cuda.is_available():
            device = torch.device("cuda", 0)
            torch.cuda.set_device(device)
        else:
            device = torch.device("cpu")
        return torch.compile(torch.nn.Linear(2, 2).to(device)), device
    """
    (picker,) = findings(code, "XLA101")
    assert not picker.fix.safe
    (f,) = findings(code, "XLA111")
    assert not f.fix.safe and "uncompiled" in f.fix.review_reason
    assert "line 4" in f.fix.review_reason
    plain = """
    import torch
    model = torch.compile(torch.nn.Linear(2, 2).to("cuda"))
    """
    (g,) = findings(plain, "XLA111")
    assert g.fix.safe


def test_the_module_compile_method_gets_the_openxla_backend_too():
    code = """
    import re
    import torch
    model = torch.nn.Linear(2, 2).to("cuda")
    if compile_it:
        model.compile()
    pattern = re.compile("x")
    print(model(torch.ones(1, 2, device="cuda")))
    """
    (f,) = findings(code, "XLA111")
    assert f.span.start.line == 4
    assert 'model.compile(backend="openxla")' in fixed(code, "XLA111", unsafe=True)


def test_compile_on_something_that_is_not_a_model_is_left_alone():
    code = """
    import torch
    cfg = load()
    cfg.compile()
    program.compile(mode="x")
    """
    assert findings(code, "XLA111") == []
