"""Already-portable control: a Lightning module. The Trainer owns device placement, the loop,
precision and checkpoints; accelerator="tpu" (or "auto") runs it on XLA."""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(L.LightningModule):
    def __init__(self, lr: float = 1e-3) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        acc = (self(x).argmax(dim=1) == y).float().mean()
        self.log("val_acc", acc)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def loaders() -> tuple[DataLoader, DataLoader]:
    x = torch.randn(512, 32)
    y = torch.randint(0, 4, (512,))
    data = TensorDataset(x, y)
    return DataLoader(data, batch_size=64, shuffle=True), DataLoader(data, batch_size=64)


if __name__ == "__main__":
    train, val = loaders()
    trainer = L.Trainer(accelerator="tpu", devices="auto", precision="bf16-true", max_epochs=2)
    trainer.fit(Classifier(), train, val)
