"""NVIDIA's shared libraries loaded through ctypes (NVIDIA DeepLearningExamples'
``increase_l2_fetch_granularity``: held-out 153's Transformer-M, held-out 101's MONAI DiNTS):
not installed on an XLA host, so the load raises OSError. Reported with no fix; a load under
a CUDA availability test, or of another library, is not."""

from tests.helpers import findings, src

L2 = src("""
import ctypes

import torch


def increase_l2_fetch_granularity():
    _libcudart = ctypes.CDLL("libcudart.so")
    p_value = ctypes.cast((ctypes.c_int * 1)(), ctypes.POINTER(ctypes.c_int))
    _libcudart.cudaDeviceSetLimit(ctypes.c_int(0x05), ctypes.c_int(128))
    _libcudart.cudaDeviceGetLimit(p_value, ctypes.c_int(0x05))
""")


def _loads(code: str):
    return [f for f in findings(code, "XLA405") if " loads " in f.message]


def test_a_cuda_runtime_load_is_reported_without_a_fix():
    (load,) = _loads(L2)
    assert load.span.start.line == 6 and load.fix is None
    assert "loads the CUDA runtime" in load.message and "OSError" in load.message


def test_nvml_through_load_library_too():
    code = L2.replace('ctypes.CDLL("libcudart.so")', 'ctypes.cdll.LoadLibrary("libnvidia-ml.so.1")')
    (load,) = _loads(code)
    assert "NVML" in load.message


def test_a_guarded_load_and_another_library_are_left_alone():
    guarded = L2.replace(
        '    _libcudart = ctypes.CDLL("libcudart.so")\n',
        '    if torch.cuda.is_available():\n        _libcudart = ctypes.CDLL("libcudart.so")\n',
    )
    assert not _loads(guarded)
    assert not _loads(L2.replace("libcudart.so", "libc.so.6"))
