"""Device choice: never a silent fallback, never a fake GPU."""

import asyncio

from xla_lens.runner.device import Probe, choose_device, probe_interpreter

from .conftest import PYTHON


def probe(**kw) -> Probe:
    base = dict(python="3.11", executable="/py", torch="2.9.0", torch_xla="2.9.0")
    return Probe(**{**base, **kw})


def test_gpu_visible_with_torch_xla_2_9_runs_on_cpu_and_says_why():
    c = choose_device(probe(gpu_names=["GPU 0: NVIDIA H200 (UUID: x)"]))
    assert c.device == "CPU"
    assert "NVIDIA H200" in c.reason
    assert "torch_xla 2.9.0 has no CUDA PJRT device" in c.reason
    assert "removed in 2.9" in c.reason and "torch_xla <= 2.8" in c.reason


def test_explicit_cuda_with_torch_xla_2_9_is_refused_with_the_reason():
    c = choose_device(probe(gpu_dev=True), "CUDA")
    assert c.device is None and "has no CUDA PJRT device" in c.reason


def test_cuda_chosen_only_for_an_old_torch_xla_with_its_plugin():
    assert (
        choose_device(
            probe(torch="2.7.0", torch_xla="2.7.0", cuda_plugin="2.7.0", gpu_dev=True)
        ).device
        == "CUDA"
    )
    no_plugin = choose_device(probe(torch="2.7.0", torch_xla="2.7.0", gpu_dev=True))
    assert no_plugin.device == "CPU" and "without its CUDA plugin" in no_plugin.reason


def test_tpu_neuron_cpu_and_missing_torch_xla():
    assert choose_device(probe(tpu_dev=True)).device == "TPU"
    assert choose_device(probe(neuron_dev=True)).device == "NEURON"
    assert choose_device(probe(), "TPU").device is None
    plain = choose_device(probe())
    assert plain.device == "CPU" and "no GPU, TPU or Neuron" in plain.reason
    assert choose_device(probe(torch_xla=None)).device is None


def test_missing_torch_xla_beside_a_gpu_says_what_to_install_and_what_it_will_use():
    # As probed on an H200 machine whose interpreter has torch 2.11 and no torch_xla.
    gpu = "GPU 0: NVIDIA H200 (UUID: GPU-cc88d8be-7fe1-b579-7e8c-24c5195f1e8d)"
    c = choose_device(probe(torch="2.11.0", torch_xla=None, gpu_names=[gpu], gpu_dev=True))
    assert c.device is None
    assert "torch_xla is not installed in /py (torch 2.11.0)" in c.reason
    assert "pip install torch==2.9.0 torch_xla==2.9.0" in c.reason
    assert "the NVIDIA H200 will not be used" in c.reason and "UUID" not in c.reason
    assert "--interpreter" in c.reason


def test_torch_and_torch_xla_of_different_releases_are_refused_before_the_run():
    c = choose_device(probe(torch="2.11.0+cu130", torch_xla="2.9.0"))
    assert c.device is None
    assert "torch_xla 2.9.0 needs torch 2.9 exactly" in c.reason and "2.11.0+cu130" in c.reason
    # A local build tag or a patch release of the same minor is the same release.
    assert choose_device(probe(torch="2.9.0+cu128", torch_xla="2.9.0")).device == "CPU"


def test_gpu_reason_names_the_model_once_without_uuids():
    two = [f"GPU {i}: NVIDIA H200 (UUID: GPU-{i})" for i in range(2)]
    c = choose_device(probe(gpu_names=two))
    assert c.device == "CPU" and "NVIDIA H200 is visible" in c.reason and "UUID" not in c.reason


def test_probe_of_the_real_interpreter_reads_its_torch_xla_version():
    p = asyncio.run(probe_interpreter(PYTHON))
    assert p.torch_xla == "2.9.0" and p.torch and p.torch.startswith("2.9")
