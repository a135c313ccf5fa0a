from tests.helpers import findings, fix_one, fixed, src


def test_same_function_is_reordered_by_fix_all():
    code = """
    import torch

    def main(device):
        model = Net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
        model.to(device)  # onto the accelerator
        train(model, optimizer)
    """
    (f,) = findings(code, "XLA109")
    assert f.severity == 1 and f.fix.safe
    assert "model.to(device)" in f.message and "line 7" in f.message
    assert fixed(code, "XLA109") == src(
        """
        import torch

        def main(device):
            model = Net()
            model.to(device)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
            # onto the accelerator
            train(model, optimizer)
        """
    )


def test_module_level_cuda_move_and_param_groups():
    code = """
    import torch
    net = Net()
    groups = [{"params": net.backbone.parameters(), "lr": 1e-4}]
    opt = torch.optim.AdamW(groups)
    net = net.cuda()
    """
    out = fixed(code, "XLA109")
    assert out.index("net = net.cuda()") < out.index("opt = torch.optim.AdamW(groups)")


def test_model_used_between_gets_a_review_only_fix():
    code = """
    import torch
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    print(sum(p.numel() for p in model.parameters()))
    model.to(device)
    """
    (f,) = findings(code, "XLA109")
    assert not f.fix.safe and "line 4" in f.fix.review_reason
    assert fixed(code, "XLA109") == src(code)
    assert fix_one(code, f).index("model.to(device)") < fix_one(code, f).index("opt =")


def test_trainer_class_init_builds_and_another_method_moves():
    code = """
    import torch

    class Trainer:
        def __init__(self, model, lr):
            self.model = model
            self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)

        def fit(self, loader, device):
            self.model.to(device)
            for x, y in loader:
                self.optimizer.step()
    """
    (f,) = findings(code, "XLA109")
    assert f.fix is None and "self.model" in f.manual and f.severity == 1


def test_helper_returning_model_and_optimizer():
    code = """
    import torch

    def build(cfg):
        model = Net(cfg)
        opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)
        return model, opt

    def main(cfg, device):
        model, opt = build(cfg)
        model = model.to(device)
    """
    (f,) = findings(code, "XLA109")
    assert f.fix is None and "build()" in f.manual


def test_helper_taking_the_model_and_module_level_build_moved_in_a_function():
    code = """
    import torch

    def make_optimizer(m, lr):
        return torch.optim.SGD(m.parameters(), lr=lr)

    model = Net()
    optimizer = make_optimizer(model, 0.1)
    other = Net()
    other_opt = torch.optim.SGD(other.parameters(), lr=0.1)

    def main():
        other.cuda()

    model.to("cuda")
    """
    found = findings(code, "XLA109")
    assert len(found) == 2
    out = fixed(code, "XLA109")
    assert 'model.to("cuda")\noptimizer = make_optimizer(model, 0.1)' in out


def test_no_finding_when_moved_first_or_rebuilt_or_not_a_device():
    code = """
    import torch

    def a(device):
        model = Net().to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.to(device)

    def b(device):
        model = Net()
        model.to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def c(device):
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.to(torch.bfloat16)
        model.to("cpu")

    def d(device):
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

    class T:
        def __init__(self, model, device):
            self.model = model.to(device)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

        def fit(self, device):
            self.model.to(device)
    """
    assert findings(code, "XLA109") == []


def test_rebinding_in_the_other_branch_does_not_hide_the_stale_optimizer():
    code = """
    import torch

    def main(checkpoint, device):
        if checkpoint is None:
            decoder = Decoder()
            decoder_optimizer = torch.optim.Adam(decoder.parameters())
        else:
            decoder = checkpoint["decoder"]
            decoder_optimizer = checkpoint["decoder_optimizer"]
        decoder = decoder.to(device)
    """
    (f,) = findings(code, "XLA109")
    assert f.fix is None and "different blocks" in f.manual


def test_an_optimizer_over_one_module_list_and_a_move_of_another_holding_the_same_model():
    # held-out 27 (RepDistiller's train_student.py): the optimizer takes trainable_list's
    # parameters, then module_list, which also holds the student, is moved.
    code = """
    import torch
    import torch.nn as nn
    def main(model_s, model_t, regress_s):
        module_list = nn.ModuleList([])
        module_list.append(model_s)
        trainable_list = nn.ModuleList([])
        trainable_list.append(model_s)
        module_list.append(regress_s)
        trainable_list.append(regress_s)
        optimizer = torch.optim.SGD(trainable_list.parameters(), lr=0.1)
        module_list.append(model_t)
        if torch.cuda.is_available():
            module_list.cuda()
    """
    (f,) = findings(code, "XLA109")
    assert "`trainable_list` parameters (`model_s` among them)" in f.message
    assert "`module_list.cuda()` (line 13), which holds `model_s` too" in f.message
    assert f.fix is None and "move `module_list` to the device" in f.manual
    apart = code.replace("trainable_list.append(model_s)", "trainable_list.append(head)").replace(
        "trainable_list.append(regress_s)", "trainable_list.append(head)"
    )
    assert findings(apart, "XLA109") == []


def test_a_move_of_a_wrapper_moves_the_module_it_holds():
    # held-out 29 (augmix's cifar.py): the optimizer is built, then
    # `net = torch.nn.DataParallel(net).cuda()`.
    code = """
    import torch
    net = Net()
    optimizer = torch.optim.SGD(net.parameters(), 0.1, momentum=0.9)
    net = torch.nn.DataParallel(net).cuda()
    """
    (f,) = findings(code, "XLA109")
    assert "`torch.nn.DataParallel(net).cuda()` (line 4)" in f.message and f.fix.safe
    out = fixed(code, "XLA109")
    assert out.index("net = torch.nn.DataParallel(net).cuda()") < out.index("optimizer =")


def test_a_parameter_getter_and_a_tuple_alias_to_the_attribute_moved_later():
    # held-out 29 (deeplab-xception's Trainer.__init__): parameter groups from
    # model.get_1x_lr_params(), `self.model, self.optimizer = model, optimizer`, and the move of
    # self.model under `if args.cuda:` afterwards.
    code = """
    import torch
    class Trainer:
        def __init__(self, args, model):
            params = [{"params": model.get_1x_lr_params(), "lr": args.lr}]
            optimizer = torch.optim.SGD(params, momentum=0.9)
            self.model, self.optimizer = model, optimizer
            if args.cuda:
                self.model = torch.nn.DataParallel(self.model)
                self.model = self.model.cuda()
    """
    (f,) = findings(code, "XLA109")
    assert "`self.model.cuda()` (line 9)" in f.message and f.span.start.line == 4


def test_a_guarded_move_goes_up_with_its_guard_but_not_an_else_branch():
    """Held-out 81: ``if args.cuda: model = model.cuda()`` after the optimizer; the guard has
    no other branch, so it goes above the optimizer as a whole."""
    text = """
    import torch

    def build(args):
        model = torch.nn.Linear(2, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        if args.cuda:
            model = model.cuda()
        return model, optimizer
    """
    (f,) = findings(text, "XLA109")
    assert f.fix is not None and f.fix.safe
    out = fixed(text, "XLA109")
    assert out.index("if args.cuda:") < out.index("optimizer = torch.optim.SGD")
    with_else = text.replace(
        "            model = model.cuda()\n",
        "            model = model.cuda()\n        else:\n            model = model.half()\n",
    )
    (f,) = findings(with_else, "XLA109")
    assert f.fix is None
