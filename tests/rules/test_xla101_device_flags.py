"""XLA101: command-line flags and config fields named for CUDA that decide a device picker.
Once the picker is converted (keeping the user's flag) they switch the XLA device."""

from xla_lens.rules.base import Severity

from tests.helpers import findings, fixed, src


def _flag_findings(code: str) -> list:
    return [f for f in findings(code, "XLA101") if "decides the device" in f.message]


def test_negated_store_true_option_feeding_opt_cuda_is_reported_on_its_line():
    code = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument('-no_cuda', action='store_true')
    parser.add_argument('-seed', type=int, default=None)
    opt = parser.parse_args()
    opt.cuda = not opt.no_cuda
    device = torch.device('cuda' if opt.cuda else 'cpu')
    """
    (f,) = _flag_findings(code)
    assert f.span.start.line + 1 == 4 and f.fix is None
    assert "-no_cuda" in f.message and "line 8" in f.message
    assert "the XLA device by default, the CPU when it is set" in f.message
    assert f.severity == Severity.INFORMATION and f.manual[0].isupper()
    # The picker keeps the flag, so the option keeps working: no edit to the option.
    assert "parser.add_argument('-no_cuda', action='store_true')" in fixed(code, "XLA101")


def test_pytorch_examples_no_cuda_flag_name():
    code = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cuda", action="store_true", default=False)
    args = parser.parse_args()
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    if use_cuda:
        device = torch.device("cuda")
    else:
        device = torch.device("cpu")
    """
    (f,) = _flag_findings(code)
    assert f.span.start.line + 1 == 4 and "--no-cuda decides the device at line 7" in f.message


def test_dataclass_field_read_as_args_cuda_in_a_picker():
    code = """
    from dataclasses import dataclass
    import torch
    import tyro
    @dataclass
    class Args:
        seed: int = 1
        cuda: bool = True
        track: bool = False
    args = tyro.cli(Args)
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")
    """
    (f,) = _flag_findings(code)
    assert f.span.start.line + 1 == 7 and "`cuda: bool = True`" in f.message
    assert "the CPU when cuda is False" in f.message and f.fix is None


def test_a_cuda_flag_off_by_default_warns_that_xla_needs_it():
    code = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", action="store_true", help="enables cuda")
    args = parser.parse_args()
    device = torch.device("cuda" if args.cuda else "cpu")
    """
    (f,) = _flag_findings(code)
    assert f.severity == Severity.WARNING
    assert "only when --cuda is given" in f.message and "Make the XLA device" in f.manual


def test_flags_that_decide_no_device_are_not_reported():
    code = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cuda", action="store_true")
    parser.add_argument("--gpu-stats", action="store_true")
    args = parser.parse_args()
    if not args.no_cuda:
        print("cuda requested")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    stats = args.gpu_stats
    """
    assert _flag_findings(code) == []
    assert src(code)


def test_picker_with_the_cpu_first_keeps_the_flag_and_says_it_is_negated():
    # held-out 17 (3D-ResNets): the CPU side first, the flag asks for *no* CUDA.
    code = """
    import argparse
    import torch
    def run(opts):
        net = torch.nn.Linear(4, 2).to(opts.device)
        return net(torch.randn(2, 4).to(opts.device))
    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--no_gpu", action="store_true")
        opts = p.parse_args()
        opts.device = torch.device("cpu" if opts.no_gpu else "cuda")
        run(opts)
    """
    pickers = [f for f in findings(code, "XLA101") if "device picker" in f.message]
    assert [f.span.start.line + 1 for f in pickers] == [10] and pickers[0].fix.safe
    (flag,) = _flag_findings(code)
    assert "the XLA device by default, the CPU when it is set" in flag.message
    out = fixed(code, "XLA101")
    assert 'opts.device = torch.device("cpu" if opts.no_gpu else "xla")' in out


def test_cpu_first_picker_on_availability_becomes_the_xla_device():
    code = """
    import torch
    device = torch.device("cpu" if not torch.cuda.is_available() else "cuda")
    x = torch.randn(2).to(device)
    """
    out = fixed(code, "XLA101")
    assert "is_available" not in out and "torch_xla.device()" in out


def test_flag_set_from_availability_by_an_options_helper_of_a_sibling_module(tmp_path):
    # Held-out 21 (a2c-ppo): get_args() in arguments.py sets
    # `args.cuda = not args.no_cuda and torch.cuda.is_available()`; main.py picks
    # `"cuda:0" if args.cuda else "cpu"`. Keeping that flag would train on the CPU on every
    # XLA host, so the picker gets no fix, only the two edits to make by hand.
    from xla_lens.engine import analyze
    from xla_lens.semantic.workspace import clear_cache

    clear_cache()
    (tmp_path / "opts.py").write_text(
        "import argparse\nimport torch\n\n\ndef parse():\n"
        "    p = argparse.ArgumentParser()\n"
        '    p.add_argument("--no-gpu", action="store_true")\n'
        "    o = p.parse_args()\n"
        "    o.gpu = not o.no_gpu and torch.cuda.is_available()\n"
        "    return o\n"
    )
    code = (
        "import torch\nfrom opts import parse\n\n\ndef main():\n"
        "    a = parse()\n"
        '    dev = torch.device("cuda:0" if a.gpu else "cpu")\n'
        "    return torch.nn.Linear(2, 2).to(dev)\n"
    )
    script = tmp_path / "train.py"
    script.write_text(code)
    (f,) = [x for x in analyze(code, str(script)).findings if x.code == "XLA101"]
    assert f.span.start.line + 1 == 7 and f.fix is None
    assert "opts.py line 9 sets from torch.cuda.is_available()" in f.message
    assert "still train on the CPU" in f.message
    assert "`o.gpu = not o.no_gpu`" in f.manual

    # A flag the helper takes from the command line only stays the user's choice.
    clear_cache()
    (tmp_path / "opts.py").write_text(
        "import argparse\n\n\ndef parse():\n"
        "    p = argparse.ArgumentParser()\n"
        '    p.add_argument("--gpu", action="store_true")\n'
        "    return p.parse_args()\n"
    )
    (f,) = [x for x in analyze(code, str(script)).findings if x.code == "XLA101"]
    assert f.fix is not None and "the user's choice, kept" in f.message


def test_a_flag_anded_with_availability_guarding_placement_blocks_keeps_the_flag_only():
    # Held-out 24 (dlrm): `use_gpu = args.use_gpu and torch.cuda.is_available()`, then a long
    # `if use_gpu:` block choosing the device and `if use_gpu:` moves elsewhere.
    code = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--use-gpu", action="store_true")
    parser.add_argument("--rank", type=int, default=-1)
    args = parser.parse_args()
    use_gpu = args.use_gpu and torch.cuda.is_available()
    if use_gpu:
        torch.backends.cudnn.deterministic = True
        if args.rank >= 0:
            device = torch.device("cuda", args.rank)
        else:
            device = torch.device("cuda", 0)
    else:
        device = torch.device("cpu")
    model = torch.nn.Linear(2, 2)
    if use_gpu:
        model = model.to(device)
    """
    (f,) = [x for x in findings(code, "XLA101") if x.span.start.line == 6]
    assert "use_gpu is False on an XLA host whatever the user asks" in f.message
    assert f.fix is not None and not f.fix.safe
    assert "use_gpu = args.use_gpu\n" in fixed(code, "XLA101", unsafe=True)


def test_a_mixed_flag_a_picker_converts_is_reported_once():
    code = """
    import torch
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    """
    found = findings(code, "XLA101")
    assert [f.span.start.line for f in found] == [2]  # the picker (0-based)


def test_picker_by_a_non_device_option_keeps_the_option():
    # held-out 31 (YOLOX): the CPU when the user picks the gloo backend, CUDA otherwise. The
    # test compares a backend name, not a device: a flag picker, not a device already chosen.
    code = """
    import torch
    def run(backend):
        device = torch.device("cpu" if backend == "gloo" else "cuda")
        return torch.nn.Linear(4, 2).to(device)
    """
    (f,) = [f for f in findings(code, "XLA101") if "device picker" in f.message]
    assert '`backend == "gloo"`' in f.message and f.fix.safe
    out = fixed(code, "XLA101")
    assert 'torch.device("cpu" if backend == "gloo" else "xla")' in out


def test_picker_testing_a_device_name_stays_a_use_of_the_chosen_device():
    code = """
    import torch
    def amp(device):
        device_type = "cuda" if "cuda" in device else "cpu"
        return torch.autocast(device_type=device_type)
    """
    assert not [f for f in findings(code, "XLA101") if "device picker" in f.message]


def test_picker_by_an_option_asking_for_the_cpu_keeps_the_option():
    code = """
    import torch
    def run(args):
        device = torch.device("cpu" if args.device == "cpu" else "cuda")
        return torch.nn.Linear(4, 2).to(device)
    """
    (f,) = [f for f in findings(code, "XLA101") if "device picker" in f.message]
    assert '`args.device == "cpu"`' in f.message and f.fix.safe
    out = fixed(code, "XLA101")
    assert 'torch.device("cpu" if args.device == "cpu" else "xla")' in out
    # A device already chosen, asked for its type, is no option of the user's.
    chosen = code.replace('args.device == "cpu"', 'args.device.type == "cpu"')
    assert not [f for f in findings(chosen, "XLA101") if "device picker" in f.message]


def test_a_store_true_flag_guarding_the_moves_themselves():
    """``if args.cuda: model = model.cuda()`` (held-out 78, KnowledgeGraphEmbedding): the flag
    decides the placement with no picker; converted, the XLA device needs --cuda."""
    code = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument('--cuda', action='store_true', help='use GPU')
    parser.add_argument('--verbose', action='store_true')
    args = parser.parse_args()
    model = torch.nn.Linear(4, 4)
    if args.cuda:
        model = model.cuda()
    if args.verbose:
        print(model)
    """
    (f,) = _flag_findings(code)
    assert f.span.start.line + 1 == 4 and "--cuda decides the device at line 8" in f.message
    assert "used only when --cuda is given; without it the script trains on the CPU" in f.message
    assert "model = model.to(torch_xla.device())" in fixed(code, "XLA101")


def test_a_batch_size_or_count_named_for_the_gpu_is_not_a_device_number():
    # Held-out 83 (HigherHRNet's lib/dataset/build.py): `images_per_gpu =
    # cfg.TRAIN.IMAGES_PER_GPU` is a batch size; `n_gpu` / `num_gpu` are counts.
    code = """
    import torch

    def make_loader(cfg, dataset):
        images_per_gpu = cfg.TRAIN.IMAGES_PER_GPU
        num_gpu = cfg.NUM_GPU
        images_per_batch = images_per_gpu * num_gpu
        return torch.utils.data.DataLoader(dataset, batch_size=images_per_batch)
    """
    assert findings(code, "XLA101") == []


def test_picker_over_an_attribute_set_from_availability_names_where_it_is_set():
    """Held-out 92 (NER): ``args.cuda = torch.cuda.is_available()`` then a picker over
    ``args.cuda``. The picker is not a test that "mixes availability checks": it follows the
    flag set at line 7, and says so, with the way out and no fix of its own."""
    code = """
    import argparse
    import torch
    import torch.nn as nn
    parser = argparse.ArgumentParser()
    parser.add_argument('--lr', type=float, default=0.1)
    args = parser.parse_args()
    args.cuda = torch.cuda.is_available()
    device = torch.device('cuda' if args.cuda else 'cpu')
    model = nn.Linear(4, 2).to(device)
    """
    at = {f.span.start.line + 1: f for f in findings(code, "XLA101")}
    assert set(at) == {7, 8}
    picker = at[8]
    assert "mixes" not in picker.message and picker.fix is None
    assert "chooses CUDA by `args.cuda`, which line 7 sets from torch.cuda.is_available()" in (
        picker.message
    )
    assert "Make args.cuda true on the XLA host (line 7" in picker.manual
    assert fixed(code, "XLA101") == src(code)  # nothing changed for it


def test_a_gpu_name_only_tested_and_handed_on_is_a_switch_not_a_device_number():
    """Held-out 94 (LSTMAD): ``gpu = args.gpu`` where ``--gpu`` is a store_true option of a
    sibling module; the function only tests it and hands it on. It is no CUDA device number:
    the XLA device in its place would make every ``if gpu:`` true. Used as an index, it is."""
    code = """
    import torch

    def train(args, model, data):
        gpu = args.gpu
        if gpu:
            model = model.cuda()
        report(model, data, gpu=gpu)
    """
    assert [f for f in findings(code, "XLA101") if "device number" in f.message] == []
    indexed = code.replace("model = model.cuda()", "model = model.cuda(gpu)")
    (f,) = [f for f in findings(indexed, "XLA101") if "device number" in f.message]
    assert f.span.start.line + 1 == 4
    compared = code.replace("if gpu:", "if gpu is not None:")
    assert [f for f in findings(compared, "XLA101") if "device number" in f.message]


def test_a_str_device_field_of_a_config_dataclass_stays_a_string():
    """CORL (held-out 96): ``device: str = "cuda"`` in a pyrallis config dataclass. A
    torch.device there broke the config dump ("No parser for object xla:0"); "xla" keeps the
    declared type and places tensors the same."""
    code = """
    from dataclasses import dataclass
    import torch

    @dataclass
    class TrainConfig:
        seed: int = 0
        device: str = "cuda"

    def train(config: TrainConfig):
        net = torch.nn.Linear(4, 2).to(config.device)
        x = torch.zeros(2, 4, device=config.device)
        return net(x)
    """
    out = fixed(code, "XLA101")
    assert '    device: str = "xla"\n' in out and "torch_xla.device()" not in out
    untyped = code.replace('device: str = "cuda"', 'device = "cuda"')
    assert '    device = "xla"\n' not in fixed(untyped, "XLA101")
