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
    assert (f.span.start.line, f.span.end.line) == (7, 7)
    expected = src(DIST).replace(
        'if __name__ == "__main__":',
        'def _mp_fn(index):\n    main()\n\n\nif __name__ == "__main__":',
    )
    assert fixed(DIST, "XLA204") == expected
    # The entry point does not depend on the target API.
    assert fixed(DIST, "XLA204", target="legacy") == expected


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
