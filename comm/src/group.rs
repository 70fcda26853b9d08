//! The process group ([`ProcessGroup`]): creation from a store, the
//! synchronous collectives on typed slices, the asynchronous ones on owned
//! [`Buffer`]s run by the group's communication thread, and the ordering
//! that keeps every rank's sequence numbers in step.
//!
//! Ordering: every operation, synchronous or asynchronous, takes a ticket
//! when it is issued and executes only when all earlier tickets have
//! finished, so a group's operations run in issue order whichever thread
//! runs them. Like any collective library, every rank must issue the same
//! collectives in the same order.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::clock::now_ns;
use crate::dtype::{as_bytes, as_bytes_mut, Buffer, DType, Element, ReduceOp};
use crate::engine::{AbortChannel, Engine, OpCtx};
use crate::error::CommError;
use crate::mesh;
use crate::options::{AlgorithmChoice, DirectReadChoice, GroupOptions};
use crate::reduce::finish_avg;
use crate::store::{StoreClient, StoreServer};
use crate::token::Token;
use crate::wire::{Algorithm, OpDesc, OpKind, Transport, NO_ROOT};
use crate::work::{Work, WorkInfo, WorkResult, WorkSlot};

type Result<T> = std::result::Result<T, CommError>;

/// Request timeout of the store connection used for failure reports.
const ABORT_STORE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// A type-erased operation on borrowed bytes.
enum Op<'a> {
    AllReduce {
        buf: &'a mut [u8],
        op: ReduceOp,
    },
    Broadcast {
        buf: &'a mut [u8],
        root: usize,
    },
    AllGather {
        input: &'a [u8],
        output: &'a mut [u8],
    },
    Gather {
        input: &'a [u8],
        output: Option<&'a mut [u8]>,
        root: usize,
    },
    Scatter {
        input: Option<&'a [u8]>,
        output: &'a mut [u8],
        root: usize,
    },
    ReduceScatter {
        input: &'a [u8],
        output: &'a mut [u8],
        op: ReduceOp,
    },
    Barrier,
    Send {
        data: &'a [u8],
        dst: usize,
    },
    Recv {
        data: &'a mut [u8],
        src: usize,
    },
}

/// An operation on owned buffers, queued for the communication thread.
enum AsyncOp {
    AllReduce {
        buf: Buffer,
        op: ReduceOp,
    },
    Broadcast {
        buf: Buffer,
        root: usize,
    },
    AllGather {
        input: Buffer,
    },
    Gather {
        input: Buffer,
        root: usize,
    },
    Scatter {
        input: Option<Buffer>,
        output: Buffer,
        root: usize,
    },
    ReduceScatter {
        input: Buffer,
        op: ReduceOp,
    },
    Barrier,
    Send {
        buf: Buffer,
        dst: usize,
    },
    Recv {
        buf: Buffer,
        src: usize,
    },
}

/// Settings the executor needs for every operation.
struct ExecConfig {
    algorithm: AlgorithmChoice,
    threshold: usize,
    /// Every rank is on this host and may read its peers' memory.
    direct_read: bool,
}

struct Sched {
    issued: u64,
    next: u64,
    /// Collectives (not send/recv) issued so far: the next collective's sequence number.
    collectives: u64,
}

struct Shared {
    rank: usize,
    world: usize,
    transport: Transport,
    peer_transports: Vec<Transport>,
    clock_offset_ns: i64,
    clock_uncertainty_ns: u64,
    host_id: String,
    options: GroupOptions,
    cfg: ExecConfig,
    engine: Mutex<Engine>,
    sched: Mutex<Sched>,
    sched_cv: Condvar,
}

impl Shared {
    fn sched(&self) -> MutexGuard<'_, Sched> {
        self.sched.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the next ticket; a collective also takes the next collective sequence number.
    fn issue(&self, collective: bool) -> (u64, Option<u64>) {
        let mut s = self.sched();
        let t = s.issued;
        s.issued += 1;
        let seq = collective.then(|| {
            let q = s.collectives;
            s.collectives += 1;
            q
        });
        (t, seq)
    }

    /// Runs `f` on the engine once every earlier ticket has finished.
    fn run_ticket<R>(&self, ticket: u64, f: impl FnOnce(&mut Engine) -> R) -> R {
        let mut s = self.sched();
        while s.next != ticket {
            s = self.sched_cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        drop(s);
        let _advance = TicketDone(self);
        let mut eng = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut eng)
    }
}

/// Lets the next ticket run, however the current one ends.
struct TicketDone<'a>(&'a Shared);

impl Drop for TicketDone<'_> {
    fn drop(&mut self) {
        let mut s = self.0.sched();
        s.next += 1;
        drop(s);
        self.0.sched_cv.notify_all();
    }
}

struct Job {
    ticket: u64,
    op: AsyncOp,
    queued_ns: u64,
    slot: Option<Arc<WorkSlot>>,
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            slot.fill(Err(CommError::WorkerGone));
        }
    }
}

/// A group of `world_size` ranks that run collectives together over TCP
/// and, between ranks on the same host, shared memory.
///
/// All methods take `&self`; the group may be shared between threads (for
/// example in an `Arc`). Dropping it finishes the queued work, then closes
/// the connections (peers still communicating see this rank leave).
pub struct ProcessGroup {
    shared: Arc<Shared>,
    queue: Mutex<Option<mpsc::Sender<Job>>>,
    worker: Option<JoinHandle<()>>,
    /// The rendezvous store this rank hosts (rank 0 under [`ProcessGroup::from_env`]); it lives
    /// as long as the group, which reports failures through it.
    store_server: Option<StoreServer>,
}

impl std::fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessGroup")
            .field("rank", &self.shared.rank)
            .field("world_size", &self.shared.world)
            .field("transport", &self.shared.transport)
            .finish()
    }
}

impl ProcessGroup {
    /// Creates rank `rank` of a group of `world_size` ranks that meet
    /// through `store`.
    ///
    /// Every rank publishes its listening address in the store, then the
    /// ranks connect to each other (the handshake checks rank, world size
    /// and the store's token), set up shared memory between ranks on the
    /// same host (unless the transport is TCP) and measure their clock
    /// offsets to rank 0. All of it must finish within `options.timeout`;
    /// if some ranks never arrive, the error names them.
    pub fn new(
        rank: usize,
        world_size: usize,
        store: &StoreClient,
        options: GroupOptions,
    ) -> Result<ProcessGroup> {
        if world_size == 0 || rank >= world_size {
            return Err(CommError::InvalidArgument(format!(
                "rank {rank} is not in a world of size {world_size}"
            )));
        }
        if world_size > u32::MAX as usize / 2 {
            return Err(CommError::InvalidArgument(format!(
                "world size {world_size} is too large"
            )));
        }
        let transport = options.resolved_transport()?;
        let algorithm = options.resolved_algorithm()?;
        let mesh = mesh::build(rank, world_size, store, &options, transport)?;
        let peer_transports = mesh
            .peers
            .iter()
            .map(|p| match p {
                None => Transport::Local,
                Some(p) if p.shm.is_some() => Transport::Shm,
                Some(_) => Transport::Tcp,
            })
            .collect();
        let mut engine = Engine::new(
            rank,
            world_size,
            mesh.peers,
            options.timeout,
            mesh.transport,
        );
        engine.bell = mesh.bell;
        // Every rank of an all-shared-memory group takes part in the probe
        // (whatever it chose), so all agree on the outcome.
        let direct_read = if mesh.transport == Transport::Shm {
            let wish = match options.resolved_direct_read()? {
                DirectReadChoice::Never => 0,
                DirectReadChoice::Auto => 1,
                DirectReadChoice::Always => 2,
            };
            match engine.probe_direct_read(wish)? {
                2 => true,
                1 => world_size == 2,
                _ => false,
            }
        } else {
            false
        };
        if world_size > 1 {
            // A second, short-timeout connection to the store for reporting
            // failures; without it failures are still detected, only not
            // attributed across ranks.
            engine.abort = StoreClient::connect(store.addr(), store.token(), ABORT_STORE_TIMEOUT)
                .ok()
                .map(|client| AbortChannel {
                    client,
                    count_key: format!("{}/abort/count", mesh.prefix),
                    reason_key: format!("{}/abort/first", mesh.prefix),
                });
        }
        let shared = Arc::new(Shared {
            rank,
            world: world_size,
            transport: mesh.transport,
            peer_transports,
            clock_offset_ns: mesh.clock_offset_ns,
            clock_uncertainty_ns: mesh.clock_uncertainty_ns,
            host_id: mesh.host_id,
            cfg: ExecConfig {
                algorithm,
                threshold: options.ring_threshold_bytes,
                direct_read,
            },
            options,
            engine: Mutex::new(engine),
            sched: Mutex::new(Sched {
                issued: 0,
                next: 0,
                collectives: 0,
            }),
            sched_cv: Condvar::new(),
        });
        let (tx, rx) = mpsc::channel::<Job>();
        let s2 = Arc::clone(&shared);
        let worker = std::thread::Builder::new()
            .name(format!("ddp-comm-r{rank}"))
            .spawn(move || worker_loop(s2, rx))
            .map_err(|e| CommError::io("starting the communication thread", e))?;
        Ok(ProcessGroup {
            shared,
            queue: Mutex::new(Some(tx)),
            worker: Some(worker),
            store_server: None,
        })
    }

    /// Creates the group from the environment a launcher sets (torchrun's `RANK`,
    /// `WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT`, and `DDP_PROBE_STORE_TOKEN`, the run's
    /// token). As with PyTorch's `env://` initialisation, rank 0 hosts the rendezvous store on
    /// `MASTER_ADDR:MASTER_PORT` and every rank connects to it. Without a token (a launcher other
    /// than `ddp-probe run`), one is derived from `TORCHELASTIC_RUN_ID` and the endpoint, which
    /// every rank computes alike.
    ///
    /// [`crate::TIMEOUT_ENV`], when set, replaces `options.timeout`.
    pub fn from_env(mut options: GroupOptions) -> Result<ProcessGroup> {
        options.timeout = options.resolved_timeout()?;
        let meeting = EnvRendezvous::connect(options.timeout)?;
        let mut group = ProcessGroup::new(meeting.rank, meeting.world, &meeting.store, options)?;
        group.store_server = meeting.server;
        Ok(group)
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.shared.rank
    }

    /// Number of ranks.
    pub fn world_size(&self) -> usize {
        self.shared.world
    }

    /// The transport(s) the group's data moves over.
    pub fn transport(&self) -> Transport {
        self.shared.transport
    }

    /// The transport to one peer (`Local` for this rank itself).
    pub fn peer_transport(&self, rank: usize) -> Option<Transport> {
        self.shared.peer_transports.get(rank).copied()
    }

    /// This host's identity (boot id and host name) as published.
    pub fn host_id(&self) -> &str {
        &self.shared.host_id
    }

    /// The options the group was created with.
    pub fn options(&self) -> &GroupOptions {
        &self.shared.options
    }

    /// Offset of rank 0's clock from this rank's, in nanoseconds, measured
    /// at creation: `local now_ns() + offset` is rank 0's clock. 0 on rank 0.
    pub fn clock_offset_ns(&self) -> i64 {
        self.shared.clock_offset_ns
    }

    /// Uncertainty of [`ProcessGroup::clock_offset_ns`] (half the smallest
    /// ping round trip), in nanoseconds. 0 on rank 0.
    pub fn clock_uncertainty_ns(&self) -> u64 {
        self.shared.clock_uncertainty_ns
    }

    /// Whether large all-reduces and broadcasts read the peers' buffers
    /// directly ([`Algorithm::DirectRead`]): every rank is on this host, the
    /// group's probe at creation found that they may read each other's
    /// memory, and the ranks' [`GroupOptions::direct_read`] allow it at this
    /// world size.
    pub fn direct_read(&self) -> bool {
        self.shared.cfg.direct_read
    }

    /// The algorithm a collective of `kind` over `bytes` bytes (the whole
    /// buffer: all_reduce/broadcast buffer, all_gather output,
    /// reduce_scatter input) would use in this group.
    pub fn algorithm_for(&self, kind: OpKind, bytes: usize) -> Algorithm {
        choose(kind, bytes, self.shared.world, &self.shared.cfg)
    }

    fn run_sync(&self, dtype: DType, op: Op<'_>) -> Result<WorkInfo> {
        let queued = now_ns();
        let collective = !matches!(op, Op::Send { .. } | Op::Recv { .. });
        let (ticket, _) = self.shared.issue(collective);
        let shared = &*self.shared;
        shared.run_ticket(ticket, |eng| execute(eng, &shared.cfg, dtype, op, queued))
    }

    // ----- synchronous collectives on typed slices -----

    /// Reduces `data` element-wise across all ranks; every rank ends with
    /// the (bitwise identical) result.
    pub fn all_reduce<T: Element>(&self, data: &mut [T], op: ReduceOp) -> Result<WorkInfo> {
        self.run_sync(
            T::DTYPE,
            Op::AllReduce {
                buf: as_bytes_mut(data),
                op,
            },
        )
    }

    /// Copies `data` of rank `root` into `data` of every rank.
    pub fn broadcast<T: Element>(&self, data: &mut [T], root: usize) -> Result<WorkInfo> {
        self.run_sync(
            T::DTYPE,
            Op::Broadcast {
                buf: as_bytes_mut(data),
                root,
            },
        )
    }

    /// Concatenates every rank's `input` in rank order into `output`
    /// (`world_size * input.len()` elements) on every rank.
    pub fn all_gather<T: Element>(&self, input: &[T], output: &mut [T]) -> Result<WorkInfo> {
        self.run_sync(
            T::DTYPE,
            Op::AllGather {
                input: as_bytes(input),
                output: as_bytes_mut(output),
            },
        )
    }

    /// Concatenates every rank's `input` in rank order into `output` on
    /// `root` (`world_size * input.len()` elements; `None` elsewhere).
    pub fn gather<T: Element>(
        &self,
        input: &[T],
        output: Option<&mut [T]>,
        root: usize,
    ) -> Result<WorkInfo> {
        self.run_sync(
            T::DTYPE,
            Op::Gather {
                input: as_bytes(input),
                output: output.map(as_bytes_mut),
                root,
            },
        )
    }

    /// Splits `input` of `root` (`world_size * output.len()` elements;
    /// `None` elsewhere) into equal parts and gives part `r` to rank `r`.
    pub fn scatter<T: Element>(
        &self,
        input: Option<&[T]>,
        output: &mut [T],
        root: usize,
    ) -> Result<WorkInfo> {
        self.run_sync(
            T::DTYPE,
            Op::Scatter {
                input: input.map(as_bytes),
                output: as_bytes_mut(output),
                root,
            },
        )
    }

    /// Reduces `input` (`world_size * output.len()` elements) across ranks
    /// and leaves part `r` of the result in `output` of rank `r`.
    pub fn reduce_scatter<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        op: ReduceOp,
    ) -> Result<WorkInfo> {
        self.run_sync(
            T::DTYPE,
            Op::ReduceScatter {
                input: as_bytes(input),
                output: as_bytes_mut(output),
                op,
            },
        )
    }

    /// Returns once every rank has entered the barrier.
    pub fn barrier(&self) -> Result<WorkInfo> {
        self.run_sync(DType::U8, Op::Barrier)
    }

    /// Sends `data` to rank `dst`, which must call [`ProcessGroup::recv`]
    /// with the same type and length.
    pub fn send<T: Element>(&self, data: &[T], dst: usize) -> Result<WorkInfo> {
        self.run_sync(
            T::DTYPE,
            Op::Send {
                data: as_bytes(data),
                dst,
            },
        )
    }

    /// Receives `data` from rank `src`.
    pub fn recv<T: Element>(&self, data: &mut [T], src: usize) -> Result<WorkInfo> {
        self.run_sync(
            T::DTYPE,
            Op::Recv {
                data: as_bytes_mut(data),
                src,
            },
        )
    }

    // ----- asynchronous collectives on owned buffers -----

    fn submit(&self, op: AsyncOp) -> Work {
        let slot = Arc::new(WorkSlot::default());
        let queued_ns = now_ns();
        let guard = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let collective = !matches!(op, AsyncOp::Send { .. } | AsyncOp::Recv { .. });
        let (ticket, seq) = self.shared.issue(collective);
        let work = Work::new(Arc::clone(&slot), seq);
        let job = Job {
            ticket,
            op,
            queued_ns,
            slot: Some(slot),
        };
        let sent = match guard.as_ref() {
            Some(tx) => tx.send(job).map_err(|e| drop(e.0)).is_ok(),
            None => {
                drop(job);
                false
            }
        };
        drop(guard);
        if !sent {
            // The job's slot already says WorkerGone; let later tickets run.
            self.shared.run_ticket(ticket, |_| ());
        }
        work
    }

    /// Queues an all-reduce of `buf`; the work returns the reduced buffer.
    pub fn all_reduce_async(&self, buf: Buffer, op: ReduceOp) -> Work {
        self.submit(AsyncOp::AllReduce { buf, op })
    }

    /// Queues a broadcast from `root`; the work returns the buffer with
    /// root's data.
    pub fn broadcast_async(&self, buf: Buffer, root: usize) -> Work {
        self.submit(AsyncOp::Broadcast { buf, root })
    }

    /// Queues an all-gather; the work returns a new buffer of
    /// `world_size * input.len()` elements.
    pub fn all_gather_async(&self, input: Buffer) -> Work {
        self.submit(AsyncOp::AllGather { input })
    }

    /// Queues a gather to `root`; the work returns the gathered buffer on
    /// root and `input` unchanged elsewhere.
    pub fn gather_async(&self, input: Buffer, root: usize) -> Work {
        self.submit(AsyncOp::Gather { input, root })
    }

    /// Queues a scatter from `root` (`input` on root only); the work
    /// returns `output` filled with this rank's part.
    pub fn scatter_async(&self, input: Option<Buffer>, output: Buffer, root: usize) -> Work {
        self.submit(AsyncOp::Scatter {
            input,
            output,
            root,
        })
    }

    /// Queues a reduce-scatter of `input` (`world_size * k` elements); the
    /// work returns a new buffer with this rank's `k` reduced elements.
    pub fn reduce_scatter_async(&self, input: Buffer, op: ReduceOp) -> Work {
        self.submit(AsyncOp::ReduceScatter { input, op })
    }

    /// Queues a barrier; the work returns an empty `U8` buffer.
    pub fn barrier_async(&self) -> Work {
        self.submit(AsyncOp::Barrier)
    }

    /// Queues a send of `buf` to `dst`; the work returns `buf`.
    pub fn send_async(&self, buf: Buffer, dst: usize) -> Work {
        self.submit(AsyncOp::Send { buf, dst })
    }

    /// Queues a receive from `src` into `buf`; the work returns it filled.
    pub fn recv_async(&self, buf: Buffer, src: usize) -> Work {
        self.submit(AsyncOp::Recv { buf, src })
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // Closing the queue lets the worker finish what is queued and stop.
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

fn worker_loop(shared: Arc<Shared>, rx: mpsc::Receiver<Job>) {
    for mut job in rx {
        let slot = job.slot.take();
        let ticket = job.ticket;
        let queued = job.queued_ns;
        let op = std::mem::replace(&mut job.op, AsyncOp::Barrier);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            shared.run_ticket(ticket, |eng| execute_owned(eng, &shared.cfg, op, queued))
        }))
        .unwrap_or_else(|_| {
            Err(CommError::Broken(
                "the communication thread panicked".into(),
            ))
        });
        if let Some(slot) = slot {
            slot.fill(result);
        }
    }
}

fn execute_owned(eng: &mut Engine, cfg: &ExecConfig, op: AsyncOp, queued: u64) -> WorkResult {
    let n = eng.world;
    match op {
        AsyncOp::AllReduce { mut buf, op } => {
            let dt = buf.dtype();
            let info = execute(
                eng,
                cfg,
                dt,
                Op::AllReduce {
                    buf: buf.as_bytes_mut(),
                    op,
                },
                queued,
            )?;
            Ok((buf, info))
        }
        AsyncOp::Broadcast { mut buf, root } => {
            let dt = buf.dtype();
            let info = execute(
                eng,
                cfg,
                dt,
                Op::Broadcast {
                    buf: buf.as_bytes_mut(),
                    root,
                },
                queued,
            )?;
            Ok((buf, info))
        }
        AsyncOp::AllGather { input } => {
            let dt = input.dtype();
            let mut out = Buffer::zeros(dt, scaled_len(input.len(), n)?);
            let info = execute(
                eng,
                cfg,
                dt,
                Op::AllGather {
                    input: input.as_bytes(),
                    output: out.as_bytes_mut(),
                },
                queued,
            )?;
            Ok((out, info))
        }
        AsyncOp::Gather { input, root } => {
            let dt = input.dtype();
            if eng.rank == root {
                let mut out = Buffer::zeros(dt, scaled_len(input.len(), n)?);
                let info = execute(
                    eng,
                    cfg,
                    dt,
                    Op::Gather {
                        input: input.as_bytes(),
                        output: Some(out.as_bytes_mut()),
                        root,
                    },
                    queued,
                )?;
                Ok((out, info))
            } else {
                let info = execute(
                    eng,
                    cfg,
                    dt,
                    Op::Gather {
                        input: input.as_bytes(),
                        output: None,
                        root,
                    },
                    queued,
                )?;
                Ok((input, info))
            }
        }
        AsyncOp::Scatter {
            input,
            mut output,
            root,
        } => {
            let dt = output.dtype();
            if let Some(i) = &input {
                if i.dtype() != dt {
                    return Err(CommError::InvalidArgument(format!(
                        "scatter input is {} but output is {}",
                        i.dtype(),
                        dt
                    )));
                }
            }
            let info = execute(
                eng,
                cfg,
                dt,
                Op::Scatter {
                    input: input.as_ref().map(Buffer::as_bytes),
                    output: output.as_bytes_mut(),
                    root,
                },
                queued,
            )?;
            Ok((output, info))
        }
        AsyncOp::ReduceScatter { input, op } => {
            let dt = input.dtype();
            if input.len() % n != 0 {
                return Err(CommError::InvalidArgument(format!(
                    "reduce_scatter input of {} elements is not divisible by the world size {n}",
                    input.len()
                )));
            }
            let mut out = Buffer::zeros(dt, input.len() / n);
            let info = execute(
                eng,
                cfg,
                dt,
                Op::ReduceScatter {
                    input: input.as_bytes(),
                    output: out.as_bytes_mut(),
                    op,
                },
                queued,
            )?;
            Ok((out, info))
        }
        AsyncOp::Barrier => {
            let info = execute(eng, cfg, DType::U8, Op::Barrier, queued)?;
            Ok((Buffer::U8(Vec::new()), info))
        }
        AsyncOp::Send { buf, dst } => {
            let info = execute(
                eng,
                cfg,
                buf.dtype(),
                Op::Send {
                    data: buf.as_bytes(),
                    dst,
                },
                queued,
            )?;
            Ok((buf, info))
        }
        AsyncOp::Recv { mut buf, src } => {
            let dt = buf.dtype();
            let info = execute(
                eng,
                cfg,
                dt,
                Op::Recv {
                    data: buf.as_bytes_mut(),
                    src,
                },
                queued,
            )?;
            Ok((buf, info))
        }
    }
}

/// `len * world`, or an error where that does not fit in memory.
fn scaled_len(len: usize, world: usize) -> Result<usize> {
    len.checked_mul(world)
        .filter(|&n| n <= isize::MAX as usize / 8)
        .ok_or_else(|| {
            invalid(format!(
                "{len} elements times world size {world} is too large"
            ))
        })
}

/// Chooses the algorithm from the kind, the whole buffer's size and the
/// configuration.
fn choose(kind: OpKind, bytes: usize, world: usize, cfg: &ExecConfig) -> Algorithm {
    if world == 1 {
        return Algorithm::Local;
    }
    let large = match cfg.algorithm {
        AlgorithmChoice::Ring => true,
        AlgorithmChoice::Latency => false,
        AlgorithmChoice::Auto => bytes >= cfg.threshold,
    };
    match kind {
        OpKind::AllReduce | OpKind::Broadcast if large && cfg.direct_read => Algorithm::DirectRead,
        OpKind::AllReduce if large => Algorithm::Ring,
        OpKind::AllReduce => Algorithm::RecursiveDoubling,
        OpKind::Broadcast if large => Algorithm::Pipeline,
        OpKind::Broadcast => Algorithm::BinomialTree,
        OpKind::AllGather | OpKind::ReduceScatter if large => Algorithm::Ring,
        OpKind::AllGather | OpKind::ReduceScatter => Algorithm::Direct,
        OpKind::Gather | OpKind::Scatter => Algorithm::Direct,
        OpKind::Barrier => Algorithm::Dissemination,
        OpKind::Send | OpKind::Recv => Algorithm::PointToPoint,
    }
}

fn invalid(msg: String) -> CommError {
    CommError::InvalidArgument(msg)
}

fn check_rank(what: &str, r: usize, world: usize) -> Result<()> {
    if r >= world {
        Err(invalid(format!(
            "{what} {r} is not in a world of size {world}"
        )))
    } else {
        Ok(())
    }
}

/// Validates, describes and runs one operation; marks the engine broken on
/// any failure after validation.
fn execute(
    eng: &mut Engine,
    cfg: &ExecConfig,
    dtype: DType,
    op: Op<'_>,
    queued: u64,
) -> Result<WorkInfo> {
    if let Some(why) = &eng.broken {
        return Err(CommError::Broken(why.clone()));
    }
    let n = eng.world;
    let rank = eng.rank;
    let es = dtype.size();
    // (kind, count, choice bytes, root/peer, reduction)
    let (kind, count, choice_bytes, root, redop) = match &op {
        Op::AllReduce { buf, op } => (
            OpKind::AllReduce,
            buf.len() / es,
            buf.len(),
            NO_ROOT,
            Some(*op),
        ),
        Op::Broadcast { buf, root } => {
            check_rank("broadcast root", *root, n)?;
            (
                OpKind::Broadcast,
                buf.len() / es,
                buf.len(),
                *root as u32,
                None,
            )
        }
        Op::AllGather { input, output } => {
            if output.len() != input.len().saturating_mul(n) {
                return Err(invalid(format!(
                    "all_gather output has {} elements, expected world size {n} x input {} = {}",
                    output.len() / es,
                    input.len() / es,
                    (input.len() / es).saturating_mul(n)
                )));
            }
            (
                OpKind::AllGather,
                input.len() / es,
                output.len(),
                NO_ROOT,
                None,
            )
        }
        Op::Gather {
            input,
            output,
            root,
        } => {
            check_rank("gather root", *root, n)?;
            if rank == *root {
                check_root_buffer(
                    "gather",
                    "output",
                    "input",
                    output.as_deref(),
                    input.len(),
                    n,
                    es,
                )?;
            }
            (
                OpKind::Gather,
                input.len() / es,
                input.len().saturating_mul(n),
                *root as u32,
                None,
            )
        }
        Op::Scatter {
            input,
            output,
            root,
        } => {
            check_rank("scatter root", *root, n)?;
            if rank == *root {
                check_root_buffer(
                    "scatter",
                    "input",
                    "output",
                    input.as_deref(),
                    output.len(),
                    n,
                    es,
                )?;
            }
            (
                OpKind::Scatter,
                output.len() / es,
                output.len().saturating_mul(n),
                *root as u32,
                None,
            )
        }
        Op::ReduceScatter { input, output, op } => {
            if input.len() != output.len().saturating_mul(n) {
                return Err(invalid(format!(
                    "reduce_scatter input has {} elements, expected world size {n} x output {} = {}",
                    input.len() / es,
                    output.len() / es,
                    (output.len() / es).saturating_mul(n)
                )));
            }
            (
                OpKind::ReduceScatter,
                output.len() / es,
                input.len(),
                NO_ROOT,
                Some(*op),
            )
        }
        Op::Barrier => (OpKind::Barrier, 0, 0, NO_ROOT, None),
        Op::Send { data, dst } => {
            check_rank("send destination", *dst, n)?;
            if *dst == rank {
                return Err(invalid(format!("rank {rank} cannot send to itself")));
            }
            (OpKind::Send, data.len() / es, data.len(), *dst as u32, None)
        }
        Op::Recv { data, src } => {
            check_rank("recv source", *src, n)?;
            if *src == rank {
                return Err(invalid(format!("rank {rank} cannot receive from itself")));
            }
            (OpKind::Recv, data.len() / es, data.len(), *src as u32, None)
        }
    };
    let algo = choose(kind, choice_bytes, n, cfg);
    let seq = match kind {
        OpKind::Send => eng.p2p_send_seq[root as usize],
        OpKind::Recv => eng.p2p_recv_seq[root as usize],
        _ => eng.seq,
    };
    let local = OpDesc {
        kind,
        dtype,
        count: count as u64,
        root,
        redop,
        algo,
        seq,
    };
    // What goes into (and is expected in) headers: a recv expects a send
    // addressed to this rank.
    let desc = if kind == OpKind::Recv {
        OpDesc {
            kind: OpKind::Send,
            root: rank as u32,
            ..local
        }
    } else {
        local
    };
    let started_ns = now_ns();
    let start = Instant::now();
    let ctx = OpCtx {
        desc,
        local,
        start,
        deadline: start + eng.timeout,
    };
    let result = run_op(eng, &ctx, algo, dtype, op);
    match result {
        Ok(()) => {
            match kind {
                OpKind::Send => eng.p2p_send_seq[root as usize] += 1,
                OpKind::Recv => eng.p2p_recv_seq[root as usize] += 1,
                _ => eng.seq += 1,
            }
            Ok(WorkInfo {
                op: kind,
                seq,
                dtype,
                count,
                bytes: count * es,
                algorithm: algo,
                transport: eng.transport,
                world_size: n,
                rank,
                queued_ns: queued,
                started_ns,
                finished_ns: now_ns(),
            })
        }
        Err(e) => Err(eng.fail(e)),
    }
}

fn run_op(eng: &mut Engine, ctx: &OpCtx, algo: Algorithm, dtype: DType, op: Op<'_>) -> Result<()> {
    let n = eng.world;
    match op {
        Op::AllReduce { buf, op } => {
            match algo {
                Algorithm::Ring => eng.ring_all_reduce(ctx, buf)?,
                Algorithm::RecursiveDoubling => eng.recursive_doubling_all_reduce(ctx, buf, op)?,
                Algorithm::DirectRead => eng.direct_read_all_reduce(ctx, buf, op)?,
                _ => {}
            }
            if op == ReduceOp::Avg {
                finish_avg(dtype, buf, n);
            }
            Ok(())
        }
        Op::Broadcast { buf, root } => match algo {
            Algorithm::Pipeline => eng.pipeline_broadcast(ctx, buf, root),
            Algorithm::DirectRead => eng.direct_read_broadcast(ctx, buf, root),
            Algorithm::BinomialTree => eng.binomial_broadcast(ctx, buf, root),
            _ => Ok(()),
        },
        Op::AllGather { input, output } => match algo {
            Algorithm::Ring => eng.ring_all_gather(ctx, input, output),
            Algorithm::Direct => eng.direct_all_gather(ctx, input, output),
            _ => {
                output.copy_from_slice(input);
                Ok(())
            }
        },
        Op::Gather {
            input,
            output,
            root,
        } => match algo {
            Algorithm::Direct => eng.direct_gather(ctx, input, output, root),
            _ => {
                if let Some(o) = output {
                    o.copy_from_slice(input);
                }
                Ok(())
            }
        },
        Op::Scatter {
            input,
            output,
            root,
        } => match algo {
            Algorithm::Direct => eng.direct_scatter(ctx, input, output, root),
            _ => {
                if let Some(i) = input {
                    output.copy_from_slice(i);
                }
                Ok(())
            }
        },
        Op::ReduceScatter { input, output, op } => {
            match algo {
                Algorithm::Ring => eng.ring_reduce_scatter(ctx, input, output)?,
                Algorithm::Direct => eng.direct_reduce_scatter(ctx, input, output, op)?,
                _ => output.copy_from_slice(input),
            }
            if op == ReduceOp::Avg {
                finish_avg(dtype, output, n);
            }
            Ok(())
        }
        Op::Barrier => match algo {
            Algorithm::Dissemination => eng.dissemination_barrier(ctx),
            _ => Ok(()),
        },
        Op::Send { data, dst } => eng.p2p_send(ctx, data, dst),
        Op::Recv { data, src } => eng.p2p_recv(ctx, &ctx.desc, data, src),
    }
}

/// The root's world-sized buffer of gather (its output) or scatter (its input) must hold
/// `n` times the per-rank buffer of `per_rank_bytes`.
fn check_root_buffer(
    op: &str,
    big_name: &str,
    small_name: &str,
    big: Option<&[u8]>,
    per_rank_bytes: usize,
    n: usize,
    es: usize,
) -> Result<()> {
    match big {
        Some(b) if b.len() == per_rank_bytes.saturating_mul(n) => Ok(()),
        Some(b) => Err(invalid(format!(
            "{op} {big_name} has {} elements, expected world size {n} x {small_name} {} = {}",
            b.len() / es,
            per_rank_bytes / es,
            (per_rank_bytes / es).saturating_mul(n)
        ))),
        None => Err(invalid(format!("{op} root needs an {big_name} buffer"))),
    }
}

/// The rendezvous a launcher's environment describes (torchrun's `RANK`,
/// `WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT`, and `DDP_PROBE_STORE_TOKEN`):
/// rank 0 hosts the store on `MASTER_ADDR:MASTER_PORT`, every rank is
/// connected to it. [`ProcessGroup::from_env`] builds on it, and so does any
/// other group that meets through the same store (the NCCL group of the
/// `ddp-cuda` crate).
pub struct EnvRendezvous {
    /// This rank.
    pub rank: usize,
    /// Number of ranks.
    pub world: usize,
    /// This rank's connection to the store.
    pub store: StoreClient,
    /// The store itself, on rank 0: keep it alive as long as any rank may use it.
    pub server: Option<StoreServer>,
}

impl EnvRendezvous {
    /// Reads the environment and connects (rank 0 hosts the store first).
    /// Without a token (a launcher other than `ddp-probe run`), one is
    /// derived from `TORCHELASTIC_RUN_ID` and the endpoint, which every rank
    /// computes alike.
    pub fn connect(timeout: std::time::Duration) -> Result<EnvRendezvous> {
        fn var(name: &str) -> Result<String> {
            std::env::var(name).map_err(|_| {
                CommError::InvalidArgument(format!("environment variable {name} is not set"))
            })
        }
        fn num(name: &str) -> Result<usize> {
            let v = var(name)?;
            v.trim().parse().map_err(|_| {
                CommError::InvalidArgument(format!("{name}={v:?} is not a non-negative integer"))
            })
        }
        let rank = num("RANK")?;
        let world = num("WORLD_SIZE")?;
        // Peer connections, rings and (on rank 0) the store's clients all take descriptors.
        probe_contract::rlimit::raise_open_file_limit();
        let host = var("MASTER_ADDR")?;
        let port = num("MASTER_PORT")?;
        let addr = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let token = match Token::from_env()? {
            Some(token) => token,
            None => {
                let run = std::env::var("TORCHELASTIC_RUN_ID").unwrap_or_default();
                Token::new(format!("ddp-probe:{run}@{addr}"))?
            }
        };
        let server = if rank == 0 {
            Some(StoreServer::bind(addr.as_str(), token.clone()).map_err(|e| {
                CommError::InvalidArgument(format!(
                    "rank 0 could not host the rendezvous store on MASTER_ADDR:MASTER_PORT = {addr}: \
                     {e}. If the port is in use, pick another (ddp-probe run --master-port, or leave \
                     it out to get a free one); MASTER_ADDR must be an address of this host"
                ))
            })?)
        } else {
            None
        };
        let store = StoreClient::connect(addr, &token, timeout)?;
        Ok(EnvRendezvous {
            rank,
            world,
            store,
            server,
        })
    }

    /// Rank 0 of a world of one, on a private loopback store with a fresh
    /// token: how a program that can also run without a launcher meets itself.
    pub fn alone(timeout: std::time::Duration) -> Result<EnvRendezvous> {
        let token = Token::generate()?;
        let server = StoreServer::bind("127.0.0.1:0", token.clone())?;
        let store = StoreClient::connect(server.local_addr(), &token, timeout)?;
        Ok(EnvRendezvous {
            rank: 0,
            world: 1,
            store,
            server: Some(server),
        })
    }
}
