from xla_lens.rules.base import Severity

from tests.helpers import findings, fixed, src

DIST = """
import torch.distributed as dist


def main():
    dist.init_process_group("xla")  # start


if __name__ == "__main__":
    # run it
    main()
"""


def test_entry_point_added_before_the_main_guard_with_pep8_spacing():
    (f,) = findings(DIST, "XLA204")
    assert f.severity == Severity.WARNING
    # The finding sits on the entry call the launcher replaces.
    assert (f.span.start.line, f.span.end.line) == (9, 9)
    expected = src(DIST).replace(
        'if __name__ == "__main__":',
        'def _mp_fn(index):\n    main()\n\n\nif __name__ == "__main__":',
    )
    modern = expected.replace("# run it\n    main()\n", "# run it\n    torch_xla.launch(_mp_fn)\n")
    modern = modern.replace(
        "import torch.distributed as dist\n", "import torch.distributed as dist\nimport torch_xla\n"
    )
    assert fixed(DIST, "XLA204") == modern
    legacy = expected.replace("# run it\n    main()\n", "# run it\n    xmp.spawn(_mp_fn)\n")
    legacy = legacy.replace(
        "import torch.distributed as dist\n",
        "import torch.distributed as dist\nimport torch_xla.distributed.xla_multiprocessing as xmp\n",
    )
    assert fixed(DIST, "XLA204", target="legacy") == legacy


def test_trainer_script_is_information_only():
    code = """
    from transformers import Trainer as T

    def main():
        T(model=m).train()

    if __name__ == "__main__":
        main()
    """
    (f,) = findings(code, "XLA204")
    assert f.severity == Severity.INFORMATION
    assert "def _mp_fn(index):\n    main()\n\n\nif __name__" in fixed(code, "XLA204")


def test_no_main_function_means_no_automatic_fix():
    code = """
    import torch.distributed as dist
    dist.init_process_group("xla")
    """
    (f,) = findings(code, "XLA204")
    assert f.fix is None and "_mp_fn" in f.manual


def test_entry_point_without_the_index_parameter_is_reported():
    code = """
    import torch_xla
    def _mp_fn():
        pass
    torch_xla.launch(_mp_fn)
    """
    (f,) = findings(code, "XLA204")
    assert f.fix is None and f.span.start.line == 1


def test_converted_and_single_device_scripts_report_nothing():
    converted = fixed(DIST, "XLA204")
    assert findings(converted, "XLA204") == []
    with_args = """
    import torch_xla.distributed.xla_multiprocessing as xmp
    def _mp_fn(index, flags):
        pass
    xmp.spawn(_mp_fn, args=(FLAGS,))
    """
    assert findings(with_args, "XLA204") == []
    single = """
    import torch
    def main():
        pass
    if __name__ == "__main__":
        main()
    """
    assert findings(single, "XLA204") == []
