import torch

device = torch.device("cuda")
