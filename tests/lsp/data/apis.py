import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader
from transformers import TrainingArguments

args = TrainingArguments(output_dir="out", optim="adamw_torch")
loader = DataLoader([1, 2, 3], batch_size=2)
xm.mark_step()
