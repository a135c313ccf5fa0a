"""xla-lens: move CUDA PyTorch training scripts to PyTorch/XLA."""

__version__ = "0.1.0"
