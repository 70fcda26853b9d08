"""PyTorch twin of the `lm` example for bench/run: the same character-level transformer (token
and position embeddings, pre-norm blocks of causal self-attention written out with matmul,
masked_fill and softmax, then an MLP with GELU; a final LayerNorm and an output head), the same
corpus, windows and batch, Adam, PyTorch's DistributedDataParallel on gloo."""
import math
import pathlib

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import common

p = common.arguments(__doc__, lr=3e-3)
p.add_argument("--context", type=int, default=64, help="characters per window (default: 64)")
p.add_argument("--dim", type=int, default=128, help="model width (default: 128)")
p.add_argument("--layers", type=int, default=4, help="transformer blocks (default: 4)")
p.add_argument("--heads", type=int, default=4, help="attention heads (default: 4)")
args = p.parse_args()
rank, world = common.init(args.threads)


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1, self.qkv, self.proj = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.ln2, self.fc1, self.fc2 = nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.heads = heads

    def forward(self, x, mask):
        b, t, c = x.shape
        d = c // self.heads
        q, k, v = (z.view(b, t, self.heads, d).transpose(1, 2)
                   for z in self.qkv(self.ln1(x)).split(c, 2))
        att = (q @ k.transpose(-2, -1) / math.sqrt(d)).masked_fill(mask, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Lm(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.tok = nn.Embedding(vocab, args.dim)
        self.pos = nn.Parameter(torch.randn(args.context, args.dim) * 0.02)
        self.blocks = nn.ModuleList(Block(args.dim, args.heads) for _ in range(args.layers))
        self.ln_f, self.head = nn.LayerNorm(args.dim), nn.Linear(args.dim, vocab)
        # True above the diagonal: a position may not look ahead. A plain tensor, not a buffer,
        # as in the Rust model (so DDP has no buffers to broadcast).
        self.mask = torch.ones(args.context, args.context, dtype=torch.bool).triu(1)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.tok(tokens) + self.pos[:t]
        for block in self.blocks:
            x = block(x, self.mask[:t, :t])
        return self.head(self.ln_f(x))


corpus = (pathlib.Path(__file__).resolve().parents[2] / "examples/data/lm-corpus.txt").read_text()
vocab = sorted(set(corpus))
text = torch.tensor([vocab.index(c) for c in corpus])
windows = len(corpus) - (args.context + 1)

torch.manual_seed(args.seed)
model = Lm(len(vocab))
params = sum(p.numel() for p in model.parameters())
tensors = len(list(model.parameters()))
common.log0(f"lm: {tensors} parameter tensors, {params} parameters, vocabulary {len(vocab)}, {world} ranks")
ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb)
opt = torch.optim.Adam(ddp.parameters(), lr=args.lr)

sampler = common.sampler(windows, args.seed)
offsets = torch.arange(args.context + 1)
timer, step, epoch = common.Timer(), 0, 0
while step < args.steps:
    sampler.set_epoch(epoch)
    for batch in common.epoch_batches(sampler, args.batch_size):
        if step >= args.steps:
            break
        timer.begin()
        idx = torch.tensor(batch).unsqueeze(1) + offsets.unsqueeze(0)
        seqs = text.index_select(0, idx.view(-1)).view(len(batch), args.context + 1)
        x, y = seqs[:, :-1], seqs[:, 1:]
        timer.lap("data")
        loss = F.cross_entropy(ddp(x).view(-1, len(vocab)), y.contiguous().view(-1))
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
timer.report("lm", params, tensors)
torch.distributed.barrier()  # no rank closes its connections while a peer still uses them
torch.distributed.destroy_process_group()
