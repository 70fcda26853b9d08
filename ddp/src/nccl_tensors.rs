//! libtorch CUDA tensors on an NCCL group (feature `cuda`): the checks that a
//! tensor can be handed to NCCL (defined, on the group's GPU, contiguous, of
//! a type NCCL moves) and [`NcclTensors`], the collectives of
//! [`ddp_cuda::NcclGroup`] on tensors. The group itself lives in the
//! libtorch-free `ddp-cuda` crate, which takes device buffers by address.

use comm::ReduceOp;
use ddp_cuda::nccl::{DeviceBuffer, NcclDType, NcclGroup, NcclWorkInfo};
use ddp_cuda::CudaError;
use tch::{Device, Kind, Tensor};

/// The NCCL type of a tensor of `kind`, if NCCL handles it.
pub fn nccl_dtype(kind: Kind) -> Option<NcclDType> {
    Some(match kind {
        Kind::Int8 => NcclDType::I8,
        Kind::Uint8 | Kind::Bool => NcclDType::U8,
        Kind::Int => NcclDType::I32,
        Kind::Int64 => NcclDType::I64,
        Kind::Half => NcclDType::F16,
        Kind::Float => NcclDType::F32,
        Kind::Double => NcclDType::F64,
        Kind::BFloat16 => NcclDType::BF16,
        _ => return None,
    })
}

/// Checks that `t` can be handed to NCCL on GPU `device` and gives its
/// storage as a [`DeviceBuffer`].
pub fn tensor_buffer(what: &str, t: &Tensor, device: usize) -> Result<DeviceBuffer, CudaError> {
    if !t.defined() {
        return Err(CudaError::InvalidArgument(format!(
            "{what} is an undefined tensor"
        )));
    }
    let want = Device::Cuda(device);
    if t.device() != want {
        return Err(CudaError::InvalidArgument(format!(
            "{what} is on {:?}, but this NCCL group runs on {want:?}",
            t.device()
        )));
    }
    if !t.is_contiguous() {
        return Err(CudaError::InvalidArgument(format!(
            "{what} is not contiguous; call .contiguous() first"
        )));
    }
    let kind = t.kind();
    let dtype = nccl_dtype(kind).ok_or_else(|| {
        CudaError::InvalidArgument(format!(
            "{what} has dtype {kind:?}, which NCCL does not reduce or move (supported: int8, \
             uint8, bool, int32, int64, float16, bfloat16, float32, float64)"
        ))
    })?;
    Ok(DeviceBuffer {
        ptr: t.data_ptr() as u64,
        dtype,
        count: t.numel(),
    })
}

/// The collectives of an [`NcclGroup`] on contiguous CUDA tensors of the
/// group's GPU. Each call waits for the collective, so the tensor is free
/// again when it returns.
pub trait NcclTensors {
    /// `all_reduce` in place.
    fn all_reduce_tensor(
        &self,
        tensor: &mut Tensor,
        op: ReduceOp,
    ) -> Result<NcclWorkInfo, CudaError>;
    /// `broadcast` in place from `root`.
    fn broadcast_tensor(&self, tensor: &mut Tensor, root: usize)
        -> Result<NcclWorkInfo, CudaError>;
    /// `all_gather`; `input` may be this rank's block of `output`.
    fn all_gather_tensor(
        &self,
        input: &Tensor,
        output: &mut Tensor,
    ) -> Result<NcclWorkInfo, CudaError>;
    /// `reduce_scatter`; `output` may be this rank's block of `input`.
    fn reduce_scatter_tensor(
        &self,
        input: &Tensor,
        output: &mut Tensor,
        op: ReduceOp,
    ) -> Result<NcclWorkInfo, CudaError>;
}

impl NcclTensors for NcclGroup {
    fn all_reduce_tensor(
        &self,
        tensor: &mut Tensor,
        op: ReduceOp,
    ) -> Result<NcclWorkInfo, CudaError> {
        let buf = tensor_buffer("the all_reduce tensor", tensor, self.device())?;
        // SAFETY: the buffer is the tensor's contiguous storage on the group's
        // GPU (checked), borrowed mutably until the call has waited for NCCL.
        unsafe { self.all_reduce_buffer(buf, op) }
    }

    fn broadcast_tensor(
        &self,
        tensor: &mut Tensor,
        root: usize,
    ) -> Result<NcclWorkInfo, CudaError> {
        let buf = tensor_buffer("the broadcast tensor", tensor, self.device())?;
        // SAFETY: as in all_reduce_tensor.
        unsafe { self.broadcast_buffer(buf, root) }
    }

    fn all_gather_tensor(
        &self,
        input: &Tensor,
        output: &mut Tensor,
    ) -> Result<NcclWorkInfo, CudaError> {
        let send = tensor_buffer("the all_gather input", input, self.device())?;
        let recv = tensor_buffer("the all_gather output", output, self.device())?;
        // SAFETY: both are checked tensors' storage, borrowed until NCCL is done.
        unsafe { self.all_gather_buffer(send, recv) }
    }

    fn reduce_scatter_tensor(
        &self,
        input: &Tensor,
        output: &mut Tensor,
        op: ReduceOp,
    ) -> Result<NcclWorkInfo, CudaError> {
        let send = tensor_buffer("the reduce_scatter input", input, self.device())?;
        let recv = tensor_buffer("the reduce_scatter output", output, self.device())?;
        // SAFETY: as in all_gather_tensor.
        unsafe { self.reduce_scatter_buffer(send, recv, op) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_types_map_to_nccl_types() {
        assert_eq!(nccl_dtype(Kind::BFloat16), Some(NcclDType::BF16));
        assert_eq!(nccl_dtype(Kind::Float), Some(NcclDType::F32));
        assert_eq!(nccl_dtype(Kind::Bool), Some(NcclDType::U8));
        assert_eq!(nccl_dtype(Kind::ComplexFloat), None);
    }

    #[test]
    fn tensors_are_checked_before_anything_runs() {
        let cpu = Tensor::zeros([4], (Kind::Float, Device::Cpu));
        let e = tensor_buffer("the all_reduce tensor", &cpu, 0).unwrap_err();
        assert!(
            e.to_string()
                .contains("the all_reduce tensor is on Cpu, but this NCCL group runs on Cuda(0)"),
            "{e}"
        );
        let complex = Tensor::zeros([4], (Kind::ComplexFloat, Device::Cpu));
        assert!(tensor_buffer("x", &complex, 0).is_err());
    }
}
