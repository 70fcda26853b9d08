//! Gradient bucket assignment, exactly as PyTorch's DDP does it (torch 2.13).
//!
//! The algorithm (`compute_bucket_assignment_by_size` of `reducer.cpp`,
//! `bucket_cap_mb` and the first-bucket size, the assignment at construction
//! and the one-time rebuild) lives in [`bucket_assignment`], which needs no
//! libtorch, so that the `bucket_cap_mb` advice replays the very assignment
//! this crate's reducer makes; its module documentation describes PyTorch's
//! behaviour. Everything there is re-exported here.
//!
//! This module adds what needs `tch`: the keys of a tch [`Kind`] and
//! [`Device`] ([`DtypeKeyExt::from_kind`], [`DeviceKeyExt::from_device`]) and
//! the description of a parameter tensor ([`ParamSpecExt::of_tensor`]). They
//! are extension traits, so with the traits in scope they are called as
//! associated functions of the shared types: `ParamSpec::of_tensor(&t, i,
//! false)`.

pub use bucket_assignment::*;

use tch::{Device, Kind, Tensor};

/// [`DtypeKey`] from a tch [`Kind`].
pub trait DtypeKeyExt {
    /// The `c10::ScalarType` of a tch `Kind`.
    fn from_kind(kind: Kind) -> Self;
}

impl DtypeKeyExt for DtypeKey {
    fn from_kind(kind: Kind) -> Self {
        Self(match kind {
            Kind::Uint8 => 0,
            Kind::Int8 => 1,
            Kind::Int16 => 2,
            Kind::Int => 3,
            Kind::Int64 => 4,
            Kind::Half => 5,
            Kind::Float => 6,
            Kind::Double => 7,
            Kind::ComplexHalf => 8,
            Kind::ComplexFloat => 9,
            Kind::ComplexDouble => 10,
            Kind::Bool => 11,
            Kind::QInt8 => 12,
            Kind::QUInt8 => 13,
            Kind::QInt32 => 14,
            Kind::BFloat16 => 15,
            Kind::Float8e5m2 => 23,
            Kind::Float8e4m3fn => 24,
            Kind::Float8e5m2fnuz => 25,
            Kind::Float8e4m3fnuz => 26,
        })
    }
}

/// [`DeviceKey`] from a tch [`Device`].
pub trait DeviceKeyExt {
    /// The device of tensors on a tch device. Tensors on MPS and Vulkan
    /// devices carry index 0.
    fn from_device(device: Device) -> Self;
}

impl DeviceKeyExt for DeviceKey {
    fn from_device(device: Device) -> Self {
        match device {
            Device::Cpu => Self::CPU,
            Device::Cuda(i) => Self::cuda(i8::try_from(i).unwrap_or(i8::MAX)),
            Device::Mps => Self {
                device_type: 13,
                index: 0,
            },
            Device::Vulkan => Self {
                device_type: 10,
                index: 0,
            },
        }
    }
}

/// [`ParamSpec`] from a tch [`Tensor`].
pub trait ParamSpecExt: Sized {
    /// Describes `tensor`; `sparse` says whether its gradient will be sparse.
    /// `index` only labels errors.
    fn of_tensor(tensor: &Tensor, index: usize, sparse: bool) -> Result<Self, BucketError>;
}

impl ParamSpecExt for ParamSpec {
    fn of_tensor(tensor: &Tensor, index: usize, sparse: bool) -> Result<Self, BucketError> {
        let kind = tensor.f_kind().map_err(|e| BucketError::BadTensor {
            index,
            message: e.to_string(),
        })?;
        Ok(Self {
            numel: tensor.numel() as u64,
            element_size: kind.elt_size_in_bytes() as u64,
            dtype: DtypeKey::from_kind(kind),
            device: DeviceKey::from_device(tensor.device()),
            sparse,
        })
    }
}
