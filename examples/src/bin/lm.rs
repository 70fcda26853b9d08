//! `lm`: a small character-level transformer language model on the text shipped in
//! `examples/data/lm-corpus.txt`, trained with the reference DDP. It has many parameter tensors
//! (several per block), so bucketing and the overlap of all-reduce with backward matter; it is
//! sized to run a few steps per second on a laptop CPU.
//!
//! Run it with `ddp-probe run --nproc-per-node 2 -- target/release/lm --steps 50`.

use std::process::ExitCode;

use clap::Parser;
use ddp::{Ddp, DdpOptions, DistributedSampler, Optimizer, OptimizerKind};
use ddp_examples::{epoch_batches, log0};
use probe::trace::SpanKind;
use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};

/// The corpus, built into the binary.
const CORPUS: &str = include_str!("../../data/lm-corpus.txt");

/// Command line of `lm`.
#[derive(Debug, Parser)]
#[command(about = "Train a small character-level transformer with the reference DDP.")]
struct Args {
    /// Training steps.
    #[arg(long, default_value_t = 50)]
    steps: u64,
    /// Sequences per batch on each rank.
    #[arg(long, default_value_t = 8)]
    batch_size: usize,
    /// Characters of context.
    #[arg(long, default_value_t = 64)]
    context: i64,
    /// Width of the model.
    #[arg(long, default_value_t = 128)]
    dim: i64,
    /// Transformer blocks.
    #[arg(long, default_value_t = 4)]
    layers: i64,
    /// Attention heads (must divide --dim).
    #[arg(long, default_value_t = 4)]
    heads: i64,
    /// Adam's learning rate.
    #[arg(long, default_value_t = 3e-3)]
    lr: f64,
    /// Seed of the initialisation and the sampler's shuffling.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Gradient bucket cap in MiB [default: DDP_PROBE_BUCKET_CAP_MB, else PyTorch's 25].
    #[arg(long)]
    bucket_cap_mb: Option<f64>,
    /// Per-bucket caps in MiB, as PyTorch's `bucket_cap_mb_list` [default:
    /// DDP_PROBE_BUCKET_CAP_MB_LIST].
    #[arg(long, value_name = "MB,MB,...", value_delimiter = ',')]
    bucket_cap_mb_list: Vec<f64>,
    /// Print the loss every N steps.
    #[arg(long, default_value_t = 10)]
    log_every: u64,
}

/// Pre-norm transformer block: causal self-attention, then an MLP, each with a residual.
#[derive(Debug)]
struct Block {
    ln1: nn::LayerNorm,
    qkv: nn::Linear,
    proj: nn::Linear,
    ln2: nn::LayerNorm,
    fc1: nn::Linear,
    fc2: nn::Linear,
    heads: i64,
}

impl Block {
    fn new(p: &nn::Path<'_>, dim: i64, heads: i64) -> Block {
        Block {
            ln1: nn::layer_norm(p / "ln1", vec![dim], Default::default()),
            qkv: nn::linear(p / "qkv", dim, 3 * dim, Default::default()),
            proj: nn::linear(p / "proj", dim, dim, Default::default()),
            ln2: nn::layer_norm(p / "ln2", vec![dim], Default::default()),
            fc1: nn::linear(p / "fc1", dim, 4 * dim, Default::default()),
            fc2: nn::linear(p / "fc2", 4 * dim, dim, Default::default()),
            heads,
        }
    }

    fn forward(&self, x: &Tensor, mask: &Tensor) -> Tensor {
        let (b, t, c) = x.size3().expect("a [batch, time, channels] input");
        let d = c / self.heads;
        let qkv = self.qkv.forward(&self.ln1.forward(x));
        let parts = qkv.split(c, 2);
        let heads = |z: &Tensor| z.view([b, t, self.heads, d]).transpose(1, 2);
        let (q, k, v) = (heads(&parts[0]), heads(&parts[1]), heads(&parts[2]));
        let att = (q.matmul(&k.transpose(-2, -1)) / (d as f64).sqrt())
            .masked_fill(mask, f64::NEG_INFINITY)
            .softmax(-1, Kind::Float);
        let y = att.matmul(&v).transpose(1, 2).contiguous().view([b, t, c]);
        let x = x + self.proj.forward(&y);
        let h = self
            .fc2
            .forward(&self.fc1.forward(&self.ln2.forward(&x)).gelu("none"));
        x + h
    }
}

/// The language model: token and position embeddings, blocks, a final norm and the output head.
#[derive(Debug)]
struct Lm {
    tok: nn::Embedding,
    pos: Tensor,
    blocks: Vec<Block>,
    ln_f: nn::LayerNorm,
    head: nn::Linear,
    mask: Tensor,
}

impl Lm {
    fn new(p: &nn::Path<'_>, vocab: i64, args: &Args) -> Lm {
        let dim = args.dim;
        Lm {
            tok: nn::embedding(p / "tok", vocab, dim, Default::default()),
            pos: p.var(
                "pos",
                &[args.context, dim],
                nn::Init::Randn {
                    mean: 0.0,
                    stdev: 0.02,
                },
            ),
            blocks: (0..args.layers)
                .map(|i| Block::new(&(p / "blocks" / i), dim, args.heads))
                .collect(),
            ln_f: nn::layer_norm(p / "ln_f", vec![dim], Default::default()),
            head: nn::linear(p / "head", dim, vocab, Default::default()),
            // True above the diagonal: a position may not look ahead.
            mask: Tensor::ones([args.context, args.context], (Kind::Bool, Device::Cpu)).triu(1),
        }
    }

    fn forward(&self, tokens: &Tensor) -> Tensor {
        let t = tokens.size()[1];
        let mut x = self.tok.forward(tokens) + self.pos.narrow(0, 0, t);
        let mask = self.mask.narrow(0, 0, t).narrow(1, 0, t);
        for block in &self.blocks {
            x = block.forward(&x, &mask);
        }
        self.head.forward(&self.ln_f.forward(&x))
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lm: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    if args.heads <= 0 || args.dim % args.heads != 0 {
        return Err(format!("--heads {} must divide --dim {}", args.heads, args.dim).into());
    }
    if args.batch_size == 0 || args.context < 2 {
        return Err("--batch-size must be at least 1 and --context at least 2".into());
    }
    let pg = ddp::init_process_group(Default::default())?;
    let (rank, world) = (pg.rank(), pg.world_size());

    let mut vocab: Vec<char> = CORPUS.chars().collect();
    vocab.sort_unstable();
    vocab.dedup();
    let encoded: Vec<i64> = CORPUS
        .chars()
        .map(|c| vocab.binary_search(&c).map(|i| i as i64).unwrap_or(0))
        .collect();
    let windows = encoded.len().saturating_sub(args.context as usize + 1);
    if windows == 0 {
        return Err(format!("--context {} is longer than the corpus", args.context).into());
    }
    let text = Tensor::from_slice(&encoded);

    tch::manual_seed(args.seed as i64);
    let vs = nn::VarStore::new(Device::Cpu);
    let model = Lm::new(&vs.root(), vocab.len() as i64, args);
    let mut options = DdpOptions::from_env()?;
    if let Some(mb) = args.bucket_cap_mb {
        options.bucket_cap_mb = Some(mb);
    }
    if !args.bucket_cap_mb_list.is_empty() {
        options.bucket_cap_mb_list = Some(args.bucket_cap_mb_list.clone());
    }
    let mut ddp = Ddp::new(&vs, pg.clone(), options)?;
    let params = ddp.parameters();
    let numel: usize = params.iter().map(Tensor::numel).sum();
    log0!(
        pg,
        "lm: {} parameter tensors, {numel} parameters ({:.1} MiB of gradients), vocabulary {}, {} ranks",
        params.len(),
        (numel * 4) as f64 / (1024.0 * 1024.0),
        vocab.len(),
        world
    );
    let mut opt = Optimizer::new(OptimizerKind::adam(args.lr), params);

    let mut sampler = DistributedSampler::new(windows, world, rank, true, args.seed, false)?;
    let offsets = Tensor::arange(args.context + 1, (Kind::Int64, Device::Cpu));
    let mut step = 0u64;
    let mut epoch = 0u64;
    let mut recent = Vec::new();
    let mut step_ms = Vec::new();
    while step < args.steps {
        sampler.set_epoch(epoch);
        for batch in epoch_batches(&sampler, args.batch_size)? {
            if step >= args.steps {
                break;
            }
            let began = std::time::Instant::now();
            ddp.begin_step();
            let (x, y) = ddp.timed(SpanKind::DataWait, || {
                let starts =
                    Tensor::from_slice(&batch.iter().map(|&i| i as i64).collect::<Vec<_>>());
                let idx = starts.unsqueeze(1) + &offsets.unsqueeze(0);
                let seqs = text
                    .index_select(0, &idx.view([-1]))
                    .view([batch.len() as i64, args.context + 1]);
                (
                    seqs.narrow(1, 0, args.context),
                    seqs.narrow(1, 1, args.context),
                )
            });
            let logits = ddp.forward(|| model.forward(&x))?;
            // Samples this rank trained on in this step: the summary's throughput.
            ddp.recorder()
                .counter(probe::analysis::SAMPLES_COUNTER, batch.len() as f64);
            let loss = logits
                .view([-1, vocab.len() as i64])
                .cross_entropy_for_logits(&y.contiguous().view([-1]));
            ddp.backward(&loss)?;
            ddp.optimizer_step(|| opt.step())?;
            opt.zero_grad()?;
            recent.push(loss.double_value(&[]));
            ddp.end_step();
            step_ms.push(began.elapsed().as_secs_f64() * 1e3);
            step += 1;
            if step.is_multiple_of(args.log_every.max(1)) || step == args.steps {
                let local = recent.iter().sum::<f64>() / recent.len().max(1) as f64;
                recent.clear();
                let mean = ddp::metrics::average(&pg, local)?;
                log0!(
                    pg,
                    "step {step:>5}: loss {mean:.4} (averaged over {world} ranks)"
                );
            }
        }
        epoch += 1;
    }
    ddp_examples::print_step_time(&pg, &step_ms)?;
    ddp.finish("ok")?;
    Ok(())
}
