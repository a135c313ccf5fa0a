"""Already-XLA control: the whole training step is a torch_xla.compile'd function, so the loop
around it needs no explicit sync; logging goes through a step closure."""

import torch
import torch_xla
import torch_xla.core.xla_model as xm
from torch import nn


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 128, width: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.mix = nn.Linear(width, width)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.mix(self.embed(tokens))))


def main(steps: int = 30) -> None:
    device = torch_xla.device()
    model = TinyLM().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    @torch_xla.compile(full_graph=True)
    def train_step(tokens: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad()
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        loss.backward()
        optimizer.step()
        return loss

    generator = torch.Generator().manual_seed(0)
    for step in range(steps):
        tokens = torch.randint(0, 128, (8, 33), generator=generator).to(device)
        loss = train_step(tokens)
        if step % 10 == 0:
            xm.add_step_closure(
                lambda s, v: print(f"step {s} loss {v.item():.3f}"), args=(step, loss)
            )


if __name__ == "__main__":
    main()
