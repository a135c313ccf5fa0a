import torch
import torch.nn as nn

# 🚀 train on the GPU — schnell! 😀😀
device = torch.device("cuda")
modèle = nn.Linear(4, 2).cuda()  # ünïcode 😀
étiquettes = {"🚀🚀": torch.randn(8, 4, device="cuda")}
données = étiquettes["🚀🚀"]

for _step in range(3):
    out = modèle(données)
    loss = out.sum()
    loss.backward()
