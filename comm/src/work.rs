//! Results of communication: [`WorkInfo`] (what ran, how, and when) and
//! [`Work`], the handle of an operation queued on a group's communication
//! thread.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::dtype::{Buffer, DType};
use crate::error::CommError;
use crate::wire::{Algorithm, OpKind, Transport};

/// What an operation was and how it ran: everything the instrumentation
/// records about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkInfo {
    /// The operation.
    pub op: OpKind,
    /// Its sequence number: per group for collectives, per peer pair and
    /// direction for `send`/`recv`.
    pub seq: u64,
    /// Element type.
    pub dtype: DType,
    /// Elements per rank: the buffer of `all_reduce`/`broadcast`/`send`/
    /// `recv`, the input of `all_gather`/`gather`, the output of
    /// `scatter`/`reduce_scatter`; 0 for `barrier`.
    pub count: usize,
    /// `count` times the element size.
    pub bytes: usize,
    /// The algorithm that ran.
    pub algorithm: Algorithm,
    /// The group's transport.
    pub transport: Transport,
    /// Number of ranks in the group.
    pub world_size: usize,
    /// This rank.
    pub rank: usize,
    /// When the operation was issued ([`crate::clock::now_ns`]).
    pub queued_ns: u64,
    /// When it started to execute.
    pub started_ns: u64,
    /// When it finished.
    pub finished_ns: u64,
}

impl WorkInfo {
    /// Execution time in nanoseconds (`finished - started`).
    pub fn duration_ns(&self) -> u64 {
        self.finished_ns.saturating_sub(self.started_ns)
    }
}

/// The outcome of an asynchronous operation.
pub type WorkResult = Result<(Buffer, WorkInfo), CommError>;

#[derive(Default)]
enum SlotState {
    #[default]
    Pending,
    Done(WorkResult),
    Taken,
}

/// Where the communication thread leaves a result for its [`Work`].
#[derive(Default)]
pub(crate) struct WorkSlot {
    state: Mutex<SlotState>,
    cv: Condvar,
}

impl WorkSlot {
    pub(crate) fn fill(&self, result: WorkResult) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*st, SlotState::Pending) {
            *st = SlotState::Done(result);
        }
        drop(st);
        self.cv.notify_all();
    }
}

/// Handle of an operation queued on a group's communication thread.
///
/// Operations of one group run in the order they were issued (together with
/// the group's synchronous calls); the caller may compute meanwhile and
/// collect the buffer with [`Work::wait`].
#[must_use = "a Work must be waited for to get the buffer back"]
pub struct Work {
    slot: Arc<WorkSlot>,
    seq: Option<u64>,
}

impl std::fmt::Debug for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Work")
            .field("completed", &self.is_completed())
            .finish()
    }
}

impl Work {
    pub(crate) fn new(slot: Arc<WorkSlot>, seq: Option<u64>) -> Work {
        Work { slot, seq }
    }

    /// The collective sequence number this operation will run with (known when it is issued,
    /// so a trace can name what a rank waits in); `None` for `send`/`recv`.
    pub fn seq(&self) -> Option<u64> {
        self.seq
    }

    /// Whether the operation has finished (successfully or not).
    pub fn is_completed(&self) -> bool {
        let st = self.slot.state.lock().unwrap_or_else(|e| e.into_inner());
        !matches!(*st, SlotState::Pending)
    }

    /// Blocks until the operation has finished and returns the buffer (with
    /// the result) and its timing.
    ///
    /// It cannot block forever: every operation ends within the group
    /// timeout, with an error if need be.
    pub fn wait(self) -> WorkResult {
        let mut st = self.slot.state.lock().unwrap_or_else(|e| e.into_inner());
        while matches!(*st, SlotState::Pending) {
            st = self.slot.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        match std::mem::replace(&mut *st, SlotState::Taken) {
            SlotState::Done(r) => r,
            _ => Err(CommError::WorkTaken),
        }
    }

    /// Waits up to `timeout`. `None`: still running (the handle stays
    /// valid); `Some(result)`: finished, and the result is handed over
    /// (later calls return `Some(Err(CommError::WorkTaken))`).
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<WorkResult> {
        let deadline = Instant::now() + timeout;
        let mut st = self.slot.state.lock().unwrap_or_else(|e| e.into_inner());
        while matches!(*st, SlotState::Pending) {
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            st = self
                .slot
                .cv
                .wait_timeout(st, deadline - now)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        match std::mem::replace(&mut *st, SlotState::Taken) {
            SlotState::Done(r) => Some(r),
            _ => Some(Err(CommError::WorkTaken)),
        }
    }
}
