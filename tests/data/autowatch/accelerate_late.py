"""A plain Accelerate training loop (``accelerate launch --cpu --num_processes 2``), knowing nothing of
syncdoctor: rank 1 is late in one step. Prints one JSON line per rank and step as the step starts, and the
watcher threads at the end."""

import json
import sys
import threading
import time

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

LATE_STEP, LATE_S = int(sys.argv[1]), float(sys.argv[2])

accelerator = Accelerator(cpu=True)
model = torch.nn.Linear(32, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
data = DataLoader(TensorDataset(torch.randn(64, 32), torch.randn(64, 1)), batch_size=4)
model, optimizer, data = accelerator.prepare(model, optimizer, data)
rank = accelerator.process_index
for step, (x, y) in enumerate(data):
    if step > LATE_STEP + 2:
        break
    print(json.dumps({"rank": rank, "step": step, "at": time.time()}), flush=True)
    if rank == 1 and step == LATE_STEP:
        time.sleep(LATE_S)
    loss = torch.nn.functional.mse_loss(model(x), y)
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
threads = sorted(t.name for t in threading.enumerate() if t.name.startswith("syncdoctor-watch"))
print(json.dumps({"rank": rank, "watch_threads": threads}), flush=True)
accelerator.wait_for_everyone()
