//! Element types: [`DType`], the [`Element`] trait for typed slices, the
//! owned [`Buffer`] handed to asynchronous collectives, and [`ReduceOp`].

use std::fmt;

/// Element type of a buffer on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE 754 single precision.
    F32,
    /// IEEE 754 double precision.
    F64,
    /// IEEE 754 half precision, stored as its `u16` bits.
    F16,
    /// bfloat16, stored as its `u16` bits.
    BF16,
    /// 32-bit signed integer (wrapping arithmetic).
    I32,
    /// 64-bit signed integer (wrapping arithmetic).
    I64,
    /// 8-bit unsigned integer (wrapping arithmetic).
    U8,
}

impl DType {
    /// Every element type.
    pub const ALL: [DType; 7] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::I64,
        DType::U8,
    ];

    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::F16 | DType::BF16 => 2,
            DType::U8 => 1,
        }
    }

    /// Short name (`f32`, `bf16`, ...), as used in error messages.
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
        }
    }

    pub(crate) const fn code(self) -> u8 {
        match self {
            DType::F32 => 1,
            DType::F64 => 2,
            DType::F16 => 3,
            DType::BF16 => 4,
            DType::I32 => 5,
            DType::I64 => 6,
            DType::U8 => 7,
        }
    }

    pub(crate) fn from_code(c: u8) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.code() == c)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Reduction operator of `all_reduce` and `reduce_scatter`.
///
/// Integers use wrapping arithmetic; `Avg` of integers divides the wrapped
/// sum by the world size, truncating towards zero. `f16`/`bf16` are combined
/// in `f32` and rounded to nearest even after every step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Sum divided by the world size.
    Avg,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Product.
    Product,
}

impl ReduceOp {
    /// Short name (`sum`, `avg`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Avg => "avg",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Product => "product",
        }
    }

    pub(crate) const fn code(self) -> u8 {
        match self {
            ReduceOp::Sum => 1,
            ReduceOp::Avg => 2,
            ReduceOp::Max => 3,
            ReduceOp::Min => 4,
            ReduceOp::Product => 5,
        }
    }

    pub(crate) fn from_code(c: u8) -> Option<ReduceOp> {
        [
            ReduceOp::Sum,
            ReduceOp::Avg,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::Product,
        ]
        .into_iter()
        .find(|o| o.code() == c)
    }
}

impl fmt::Display for ReduceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
    impl Sealed for u8 {}
}

/// A type whose slices the synchronous collectives accept: `f32`, `f64`,
/// [`half::f16`], [`half::bf16`], `i32`, `i64`, `u8`.
///
/// Every implementor is a plain number without padding for which every bit
/// pattern is a valid value (the trait is sealed to keep it that way).
pub trait Element: Copy + Send + Sync + 'static + sealed::Sealed {
    /// The wire type of this element type.
    const DTYPE: DType;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
}
impl Element for f64 {
    const DTYPE: DType = DType::F64;
}
impl Element for half::f16 {
    const DTYPE: DType = DType::F16;
}
impl Element for half::bf16 {
    const DTYPE: DType = DType::BF16;
}
impl Element for i32 {
    const DTYPE: DType = DType::I32;
}
impl Element for i64 {
    const DTYPE: DType = DType::I64;
}
impl Element for u8 {
    const DTYPE: DType = DType::U8;
}

/// Views a typed slice as its bytes.
pub(crate) fn as_bytes<T: Element>(s: &[T]) -> &[u8] {
    // SAFETY: `Element` types are plain numbers without padding, so all
    // `size_of_val(s)` bytes are initialised; u8 has alignment 1.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

/// Views a typed slice as its bytes, mutably.
pub(crate) fn as_bytes_mut<T: Element>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `as_bytes`; in addition every bit pattern is a valid
    // `Element` value, so any bytes written through the view are sound.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

/// An owned, typed buffer handed to the asynchronous collectives and given
/// back by [`crate::Work::wait`].
///
/// `F16` and `BF16` hold the `u16` bit patterns of the values.
#[derive(Clone, Debug, PartialEq)]
pub enum Buffer {
    /// `f32` values.
    F32(Vec<f32>),
    /// `f64` values.
    F64(Vec<f64>),
    /// `f16` bit patterns.
    F16(Vec<u16>),
    /// `bf16` bit patterns.
    BF16(Vec<u16>),
    /// `i32` values.
    I32(Vec<i32>),
    /// `i64` values.
    I64(Vec<i64>),
    /// `u8` values.
    U8(Vec<u8>),
}

impl Buffer {
    /// A buffer of `len` zeros of type `dtype`.
    pub fn zeros(dtype: DType, len: usize) -> Buffer {
        match dtype {
            DType::F32 => Buffer::F32(vec![0.0; len]),
            DType::F64 => Buffer::F64(vec![0.0; len]),
            DType::F16 => Buffer::F16(vec![0; len]),
            DType::BF16 => Buffer::BF16(vec![0; len]),
            DType::I32 => Buffer::I32(vec![0; len]),
            DType::I64 => Buffer::I64(vec![0; len]),
            DType::U8 => Buffer::U8(vec![0; len]),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            Buffer::F16(_) => DType::F16,
            Buffer::BF16(_) => DType::BF16,
            Buffer::I32(_) => DType::I32,
            Buffer::I64(_) => DType::I64,
            Buffer::U8(_) => DType::U8,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
            Buffer::F16(v) | Buffer::BF16(v) => v.len(),
            Buffer::I32(v) => v.len(),
            Buffer::I64(v) => v.len(),
            Buffer::U8(v) => v.len(),
        }
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size in bytes.
    pub fn byte_len(&self) -> usize {
        self.len() * self.dtype().size()
    }

    /// The buffer's bytes (native endianness).
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Buffer::F32(v) => as_bytes(v),
            Buffer::F64(v) => as_bytes(v),
            Buffer::F16(v) | Buffer::BF16(v) => u16_bytes(v),
            Buffer::I32(v) => as_bytes(v),
            Buffer::I64(v) => as_bytes(v),
            Buffer::U8(v) => v,
        }
    }

    /// The buffer's bytes, mutably.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Buffer::F32(v) => as_bytes_mut(v),
            Buffer::F64(v) => as_bytes_mut(v),
            Buffer::F16(v) | Buffer::BF16(v) => u16_bytes_mut(v),
            Buffer::I32(v) => as_bytes_mut(v),
            Buffer::I64(v) => as_bytes_mut(v),
            Buffer::U8(v) => v,
        }
    }
}

fn u16_bytes(v: &[u16]) -> &[u8] {
    // SAFETY: u16 has no padding; the byte view covers exactly the slice.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

fn u16_bytes_mut(v: &mut [u16]) -> &mut [u8] {
    // SAFETY: u16 has no padding and every bit pattern is valid.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

macro_rules! buffer_from {
    ($t:ty, $v:ident) => {
        impl From<Vec<$t>> for Buffer {
            fn from(v: Vec<$t>) -> Buffer {
                Buffer::$v(v)
            }
        }
    };
}
buffer_from!(f32, F32);
buffer_from!(f64, F64);
buffer_from!(i32, I32);
buffer_from!(i64, I64);
buffer_from!(u8, U8);

impl From<Vec<half::f16>> for Buffer {
    fn from(v: Vec<half::f16>) -> Buffer {
        Buffer::F16(v.into_iter().map(half::f16::to_bits).collect())
    }
}

impl From<Vec<half::bf16>> for Buffer {
    fn from(v: Vec<half::bf16>) -> Buffer {
        Buffer::BF16(v.into_iter().map(half::bf16::to_bits).collect())
    }
}
