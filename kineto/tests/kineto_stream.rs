//! The Kineto reader streams: a large generated trace (produced on the fly, never on disk or in
//! memory as a whole) is parsed with a small, bounded peak memory. Alone in its test binary so
//! that the process's peak resident memory (VmHWM) measures this parse only.

use std::io::Read;
use std::path::Path;

use probe_kineto::parse::parse_reader;

/// A Kineto trace of `events` events: mostly CPU operators (read, then dropped), one kernel
/// with its launch every 50 events, a ProfilerStep every 10 000.
struct Generated {
    events: u64,
    next: u64,
    pending: Vec<u8>,
    pos: usize,
    done: bool,
}

impl Generated {
    fn refill(&mut self) {
        self.pending.clear();
        self.pos = 0;
        if self.next == 0 {
            self.pending.extend_from_slice(
                br#"{"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":0,"world_size":1},"traceEvents":["#,
            );
        }
        while self.pending.len() < 1 << 16 && self.next < self.events {
            let i = self.next;
            let ts = 1_000_000 + i * 10;
            let sep = if i == 0 { "" } else { "," };
            let e = if i.is_multiple_of(10_000) {
                format!(
                    r#"{sep}{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":1,"tid":1,"ts":{ts},"dur":100000}}"#,
                    i / 10_000
                )
            } else if i.is_multiple_of(50) {
                format!(
                    r#"{sep}{{"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":{ts},"dur":5,"args":{{"stream":7,"correlation":{i},"device":0,"grid":[1,2,3]}}}}"#
                )
            } else if i % 50 == 1 {
                format!(
                    r#"{sep}{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{ts},"dur":3,"args":{{"correlation":{},"cbid":211}}}}"#,
                    i - 1
                )
            } else {
                format!(
                    r#"{sep}{{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":{ts},"dur":2,"args":{{"External id":{i},"Record function id":0,"Ev Idx":{i},"Input Dims":[[64,128],[64,128],[]],"Input type":["float","float","Scalar"],"Input Strides":[[128,1],[128,1],[]],"Concrete Inputs":["","","1"]}}}}"#
                )
            };
            self.pending.extend_from_slice(e.as_bytes());
            self.next += 1;
        }
        if self.next == self.events && !self.done {
            self.pending.extend_from_slice(b"]}");
            self.done = true;
        }
    }
}

impl Read for Generated {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.pending.len() {
            if self.done {
                return Ok(0);
            }
            self.refill();
        }
        let n = buf.len().min(self.pending.len() - self.pos);
        buf[..n].copy_from_slice(&self.pending[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn kineto_large_trace_is_streamed_with_bounded_memory() {
    let events = 200_000; // about 57 MB of JSON
    let mut src = Generated {
        events,
        next: 0,
        pending: Vec::new(),
        pos: 0,
        done: false,
    };
    let before = peak_rss_kib();
    let mut counted = 0u64;
    let t = parse_reader(
        Path::new("generated.json"),
        std::io::Read::by_ref(&mut src).inspect_bytes(&mut counted),
    )
    .unwrap();
    assert!(counted > 50_000_000, "only {counted} bytes generated");
    assert_eq!(t.events_read, events);
    assert!(t.truncated.is_none());
    // Kept: launches (every 50th + 1), kernels (every 50th, except the steps' slots) and
    // steps; the 192 000 operators are dropped as they are read.
    let steps = events / 10_000;
    assert_eq!(
        t.events.len() as u64,
        events / 50 + (events / 50 - steps) + steps
    );
    if let (Some(a), Some(b)) = (before, peak_rss_kib()) {
        let grown_mib = (b.saturating_sub(a)) / 1024;
        eprintln!(
            "{} MB parsed; peak RSS grew by {grown_mib} MiB",
            counted / 1_000_000
        );
        assert!(
            grown_mib < 48,
            "peak RSS grew by {grown_mib} MiB for a streamed parse"
        );
    }
}

/// Counts the bytes read through it.
trait InspectBytes: Read + Sized {
    fn inspect_bytes(self, counter: &mut u64) -> Counting<'_, Self> {
        Counting {
            inner: self,
            counter,
        }
    }
}

impl<R: Read> InspectBytes for R {}

struct Counting<'a, R> {
    inner: R,
    counter: &'a mut u64,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        *self.counter += n as u64;
        Ok(n)
    }
}
