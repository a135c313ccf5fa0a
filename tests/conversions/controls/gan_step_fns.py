"""Already-XLA control: GAN step functions built by a factory and called by a launcher module
that owns the epoch loop and the ParallelLoader (so no loop here needs a sync). Each step
accumulates gradients over a few micro-batches inside the one step."""

import torch
import torch_xla.core.xla_model as xm
from torch import nn


def hinge_d(real_logits: torch.Tensor, fake_logits: torch.Tensor) -> torch.Tensor:
    return torch.relu(1.0 - real_logits).mean() + torch.relu(1.0 + fake_logits).mean()


def make_train_fn(G: nn.Module, D: nn.Module, g_opt, d_opt, z_dim: int, accumulations: int = 2):
    def train(images: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
        chunks = torch.chunk(images, accumulations)
        d_opt.zero_grad()
        for chunk in chunks:
            z = torch.randn(chunk.shape[0], z_dim, device=chunk.device)
            fake = G(z).detach()
            d_loss = hinge_d(D(chunk), D(fake)) / accumulations
            d_loss.backward()
        xm.optimizer_step(d_opt)
        g_opt.zero_grad()
        for chunk in chunks:
            z = torch.randn(chunk.shape[0], z_dim, device=chunk.device)
            g_loss = -D(G(z)).mean() / accumulations
            g_loss.backward()
        xm.optimizer_step(g_opt)
        return {"d_loss": d_loss.detach(), "g_loss": g_loss.detach()}

    return train


def log_losses(metrics: dict[str, torch.Tensor], step: int) -> None:
    def report(values):
        print(step, {k: round(v.item(), 4) for k, v in values.items()})

    xm.add_step_closure(report, args=(metrics,))
