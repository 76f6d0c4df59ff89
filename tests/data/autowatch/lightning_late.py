"""A Lightning module trained with Trainer(strategy="ddp") on 2 CPU processes (gloo), knowing nothing of
syncdoctor: rank 1 is late in one training step. Lightning starts the second process itself. Prints one JSON
line per rank and step as the step starts ({"rank", "step", "at"}), and the watcher threads at the end."""

import json
import sys
import threading
import time

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

LATE_STEP, LATE_S = int(sys.argv[1]), float(sys.argv[2])


class Model(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(32, 1)

    def training_step(self, batch, batch_idx):
        print(json.dumps({"rank": self.global_rank, "step": batch_idx, "at": time.time()}), flush=True)
        if self.global_rank == 1 and batch_idx == LATE_STEP:
            time.sleep(LATE_S)
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def on_train_end(self) -> None:
        threads = sorted(t.name for t in threading.enumerate() if t.name.startswith("syncdoctor-watch"))
        print(json.dumps({"rank": self.global_rank, "watch_threads": threads}), flush=True)


if __name__ == "__main__":
    data = TensorDataset(torch.randn(64, 32), torch.randn(64, 1))
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_steps=LATE_STEP + 3,
                         enable_progress_bar=False, enable_model_summary=False, logger=False,
                         enable_checkpointing=False)
    trainer.fit(Model(), DataLoader(data, batch_size=4))
