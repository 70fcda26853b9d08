//! The example binaries find libtorch on their own (the rpath of
//! `examples/build.rs`) and can use the `ddp` crate.

use tch::{Device, Kind, Tensor};

#[test]
fn libtorch_and_ddp_load_without_ld_library_path() {
    let t = Tensor::arange(4, (Kind::Float, Device::Cpu));
    assert_eq!(t.sum(Kind::Float).double_value(&[]), 6.0);
    // Asking about CUDA must work whether or not a GPU is present.
    let _ = tch::Cuda::device_count();
    let sampler = ddp::DistributedSampler::new(10, 2, 1, false, 0, false).expect("sampler");
    assert_eq!(sampler.indices().expect("indices"), vec![1, 3, 5, 7, 9]);
}
