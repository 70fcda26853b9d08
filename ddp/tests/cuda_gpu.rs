//! The GPU path on a machine with a GPU, NCCL and CUPTI: a one-rank NCCL
//! group runs every collective on cudarc slices and libtorch tensors while a
//! CUPTI tracer records the kernels into a trace. Without a GPU the test
//! says what is missing and passes (the absence itself is checked by
//! `cuda_availability.rs`).

#![cfg(feature = "cuda")]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use comm::{OpKind, ReduceOp, StoreClient, StoreServer, Token};
use ddp::cuda::cupti::{KernelTracer, TracerOptions};
use ddp::cuda::nccl::{NcclGroup, NcclOptions};
use ddp::cuda::{availability, CudaLibrary};
use ddp::nccl_tensors::NcclTensors;
use probe_contract::recorder::Recorder;
use probe_contract::trace::{Header, KernelCategory, Record, SpanKind};

/// A writer the test can read while the recorder owns it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn gpu_ready() -> bool {
    let a = availability();
    if let Err(e) = a.require(&[CudaLibrary::Driver, CudaLibrary::Nccl, CudaLibrary::Cupti]) {
        println!("skipped: {e}");
        return false;
    }
    match ddp::cuda::cudarc::driver::CudaContext::device_count() {
        Ok(n) if n > 0 => true,
        other => {
            println!("skipped: no GPU ({other:?})");
            false
        }
    }
}

#[test]
fn single_rank_collectives_and_kernel_trace() {
    if !gpu_ready() {
        return;
    }
    let out = Shared::default();
    let recorder = Arc::new(Recorder::to_writer(out.clone(), Header::new("gpu", 0, 1)).unwrap());
    let tracer = KernelTracer::start(
        Arc::clone(&recorder),
        TracerOptions {
            flush_interval: None,
            ..TracerOptions::default()
        },
    )
    .unwrap();
    tracer.mark_step(0);

    let token = Token::generate().unwrap();
    let server = StoreServer::bind("127.0.0.1:0", token.clone()).unwrap();
    let store = StoreClient::connect(server.local_addr(), &token, Duration::from_secs(60)).unwrap();
    let group = NcclGroup::new(
        0,
        1,
        &store,
        NcclOptions {
            device: Some(0),
            ..NcclOptions::default()
        },
    )
    .unwrap();
    println!("{group:?}");
    let stream = Arc::clone(group.stream());

    let mut x = stream.clone_htod(&[1.0f32, 2.0, 3.0]).unwrap();
    let info = group.all_reduce(&mut x, ReduceOp::Sum).unwrap();
    assert_eq!(
        (info.op, info.seq, info.count, info.bytes),
        (OpKind::AllReduce, 0, 3, 12)
    );
    assert!(info.queued_ns <= info.started_ns && info.started_ns <= info.finished_ns);
    assert_eq!(stream.clone_dtoh(&x).unwrap(), vec![1.0, 2.0, 3.0]);
    let info = group.all_reduce(&mut x, ReduceOp::Avg).unwrap();
    assert_eq!(info.seq, 1);
    assert_eq!(group.broadcast(&mut x, 0).unwrap().seq, 2);
    let mut gathered = stream.alloc_zeros::<f32>(3).unwrap();
    group.all_gather(&x, &mut gathered).unwrap();
    assert_eq!(stream.clone_dtoh(&gathered).unwrap(), vec![1.0, 2.0, 3.0]);
    let mut scattered = stream.alloc_zeros::<f32>(3).unwrap();
    group
        .reduce_scatter(&gathered, &mut scattered, ReduceOp::Max)
        .unwrap();
    assert_eq!(group.barrier().unwrap().op, OpKind::Barrier);
    assert_eq!(group.next_seq(), 6);
    assert!(group.broadcast(&mut x, 1).is_err());
    assert_eq!(group.next_seq(), 6, "invalid calls take no sequence number");

    if tch::Cuda::is_available() {
        let mut t = tch::Tensor::from_slice(&[4.0f32, 5.0]).to_device(tch::Device::Cuda(0));
        group.all_reduce_tensor(&mut t, ReduceOp::Sum).unwrap();
        assert_eq!(
            Vec::<f32>::try_from(t.to_device(tch::Device::Cpu)).unwrap(),
            vec![4.0, 5.0]
        );
    }
    drop(group);

    tracer.flush().unwrap();
    let stats = tracer.stop().unwrap();
    println!("{stats:?}");
    assert!(stats.kernels > 0, "{stats:?}");
    recorder.flush().unwrap();
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    let spans: Vec<_> = text
        .lines()
        .filter_map(|l| match serde_json::from_str::<Record>(l).ok()? {
            Record::Span(s) => Some(s),
            _ => None,
        })
        .collect();
    assert!(
        spans
            .iter()
            .any(|s| s.kind == SpanKind::Kernel && s.category == Some(KernelCategory::Comm)),
        "no NCCL kernel among {} spans",
        spans.len()
    );
    assert!(spans.iter().all(|s| s.end >= s.start));
}
