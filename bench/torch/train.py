"""PyTorch twin of the `train` example for bench/run: the same MLP 30→64→32→1 with ReLU, the
same data (examples/data/breast_cancer.csv, 80/20 split, standardized), batch 8 per rank,
DistributedSampler, Adam, PyTorch's DistributedDataParallel on gloo. Prints the step-time line."""
import pathlib

import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import common

p = common.arguments(__doc__, lr=1e-3)
args = p.parse_args()
rank, world = common.init(args.threads)

# The data set: header "569,30,...", then 30 features and a 0/1 label per line.
csv = pathlib.Path(__file__).resolve().parents[2] / "examples/data/breast_cancer.csv"
rows = [line.split(",") for line in csv.read_text().splitlines()[1:] if line.strip()]
x_all = torch.tensor([[float(v) for v in r[:30]] for r in rows])
y_all = torch.tensor([[float(r[30])] for r in rows])
perm = torch.randperm(len(rows), generator=torch.Generator().manual_seed(args.seed))
n_test = (len(rows) + 4) // 5
train_x, train_y = x_all[perm[:-n_test]], y_all[perm[:-n_test]]
mean, std = train_x.mean(0), train_x.std(0, unbiased=False).clamp_min(1e-12)
train_x = (train_x - mean) / std

torch.manual_seed(args.seed)
model = nn.Sequential(nn.Linear(30, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))
params = sum(p.numel() for p in model.parameters())
common.log0(f"train: {len(list(model.parameters()))} parameter tensors, {params} parameters")
ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb)
opt = torch.optim.Adam(ddp.parameters(), lr=args.lr)
loss_fn = nn.BCEWithLogitsLoss()

sampler = common.sampler(len(train_x), args.seed)
timer, step, epoch = common.Timer(), 0, 0
while step < args.steps:
    sampler.set_epoch(epoch)
    for batch in common.epoch_batches(sampler, args.batch_size):
        if step >= args.steps:
            break
        timer.begin()
        idx = torch.tensor(batch)
        x, y = train_x.index_select(0, idx), train_y.index_select(0, idx)
        timer.lap("data")
        logits = ddp(x)
        loss = loss_fn(logits, y)
        timer.lap("forward")
        loss.backward()  # DDP's all-reduces run (and are waited for) inside backward
        timer.lap("backward")
        opt.step()
        opt.zero_grad()
        timer.lap("optimizer")
        loss.item()
        timer.end()
        step += 1
    epoch += 1
timer.report("train", params, len(list(model.parameters())))
torch.distributed.barrier()  # no rank closes its connections while a peer still uses them
torch.distributed.destroy_process_group()
