//! Reduction kernels on byte views of typed data: `dst = dst (op) src`
//! element-wise and the final division of `Avg`. The loops are plain so the
//! compiler vectorises them; `f16`/`bf16` go through `f32` in blocks and are
//! rounded to nearest even.

use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};

use crate::dtype::{DType, ReduceOp};

/// Elements per block when `f16`/`bf16` are widened to `f32`.
const HALF_BLOCK: usize = 512;

trait Arith: Copy {
    fn add(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    fn max(a: Self, b: Self) -> Self;
    fn min(a: Self, b: Self) -> Self;
    fn div_n(a: Self, n: usize) -> Self;
}

macro_rules! arith_float {
    ($t:ty) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            #[inline(always)]
            fn mul(a: Self, b: Self) -> Self {
                a * b
            }
            #[inline(always)]
            fn max(a: Self, b: Self) -> Self {
                a.max(b)
            }
            #[inline(always)]
            fn min(a: Self, b: Self) -> Self {
                a.min(b)
            }
            #[inline(always)]
            fn div_n(a: Self, n: usize) -> Self {
                a / n as $t
            }
        }
    };
}
arith_float!(f32);
arith_float!(f64);

macro_rules! arith_int {
    ($t:ty) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            #[inline(always)]
            fn mul(a: Self, b: Self) -> Self {
                a.wrapping_mul(b)
            }
            #[inline(always)]
            fn max(a: Self, b: Self) -> Self {
                Ord::max(a, b)
            }
            #[inline(always)]
            fn min(a: Self, b: Self) -> Self {
                Ord::min(a, b)
            }
            #[inline(always)]
            fn div_n(a: Self, n: usize) -> Self {
                (a as i128 / n as i128) as $t
            }
        }
    };
}
arith_int!(i32);
arith_int!(i64);
arith_int!(u8);

#[inline(always)]
fn reduce_slice<T: Arith>(op: ReduceOp, d: &mut [T], s: &[T]) {
    match op {
        ReduceOp::Sum | ReduceOp::Avg => {
            for (a, b) in d.iter_mut().zip(s) {
                *a = T::add(*a, *b);
            }
        }
        ReduceOp::Product => {
            for (a, b) in d.iter_mut().zip(s) {
                *a = T::mul(*a, *b);
            }
        }
        ReduceOp::Max => {
            for (a, b) in d.iter_mut().zip(s) {
                *a = T::max(*a, *b);
            }
        }
        ReduceOp::Min => {
            for (a, b) in d.iter_mut().zip(s) {
                *a = T::min(*a, *b);
            }
        }
    }
}

#[inline(always)]
fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// Rounds to nearest even; NaN stays a (quiet) NaN.
#[inline(always)]
pub(crate) fn f32_to_bf16(f: f32) -> u16 {
    let x = f.to_bits();
    if f.is_nan() {
        ((x >> 16) | 0x0040) as u16
    } else {
        let round = 0x7FFF + ((x >> 16) & 1);
        (x.wrapping_add(round) >> 16) as u16
    }
}

fn reduce_f16(op: ReduceOp, d: &mut [u16], s: &[u16]) {
    let mut a = [0f32; HALF_BLOCK];
    let mut b = [0f32; HALF_BLOCK];
    for (dc, sc) in d.chunks_mut(HALF_BLOCK).zip(s.chunks(HALF_BLOCK)) {
        let n = dc.len().min(sc.len());
        let dh: &mut [half::f16] = dc[..n].reinterpret_cast_mut();
        let sh: &[half::f16] = sc[..n].reinterpret_cast();
        dh.convert_to_f32_slice(&mut a[..n]);
        sh.convert_to_f32_slice(&mut b[..n]);
        reduce_slice(op, &mut a[..n], &b[..n]);
        dh.convert_from_f32_slice(&a[..n]);
    }
}

fn reduce_bf16(op: ReduceOp, d: &mut [u16], s: &[u16]) {
    let mut a = [0f32; HALF_BLOCK];
    let mut b = [0f32; HALF_BLOCK];
    for (dc, sc) in d.chunks_mut(HALF_BLOCK).zip(s.chunks(HALF_BLOCK)) {
        let n = dc.len().min(sc.len());
        for i in 0..n {
            a[i] = bf16_to_f32(dc[i]);
            b[i] = bf16_to_f32(sc[i]);
        }
        reduce_slice(op, &mut a[..n], &b[..n]);
        for i in 0..n {
            dc[i] = f32_to_bf16(a[i]);
        }
    }
}

/// Runs `f` on typed views of `dst` and `src` (equal lengths in bytes, a
/// multiple of the element size). Misaligned views, which the transports do
/// not produce, go through aligned copies instead of failing.
fn with_typed<T: Copy>(dst: &mut [u8], src: &[u8], f: &mut dyn FnMut(&mut [T], &[T])) {
    let size = std::mem::size_of::<T>();
    let len = dst.len().min(src.len()) / size * size;
    let (dst, src) = (&mut dst[..len], &src[..len]);
    // SAFETY: T is one of the crate's plain number types (no padding, every
    // bit pattern valid); align_to only yields correctly aligned middles.
    let (dp, dm, _) = unsafe { dst.align_to_mut::<T>() };
    let dp_len = dp.len();
    // SAFETY: as above.
    let (sp, sm, _) = unsafe { src.align_to::<T>() };
    if dp_len == 0
        && sp.is_empty()
        && std::mem::size_of_val(dm) == len
        && std::mem::size_of_val(sm) == len
    {
        f(dm, sm);
        return;
    }
    // Slow path through 8-byte aligned scratch blocks.
    const BLOCK: usize = 4096;
    let mut a = [0u64; BLOCK / 8];
    let mut b = [0u64; BLOCK / 8];
    let mut off = 0;
    while off < len {
        let n = (len - off).min(BLOCK);
        let ab = u64_bytes_mut(&mut a);
        ab[..n].copy_from_slice(&dst[off..off + n]);
        let bb = u64_bytes_mut(&mut b);
        bb[..n].copy_from_slice(&src[off..off + n]);
        // SAFETY: the scratch blocks are 8-byte aligned, enough for every T.
        let (_, am, _) = unsafe { u64_bytes_mut(&mut a)[..n].align_to_mut::<T>() };
        // SAFETY: as above.
        let (_, bm, _) = unsafe { u64_bytes_mut(&mut b)[..n].align_to::<T>() };
        f(am, bm);
        dst[off..off + n].copy_from_slice(&u64_bytes_mut(&mut a)[..n]);
        off += n;
    }
}

fn u64_bytes_mut(v: &mut [u64]) -> &mut [u8] {
    // SAFETY: u64 has no padding and every byte pattern is a valid u64.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// `dst = dst (op) src` element-wise, on the bytes of `dtype` elements.
/// `Avg` sums here; [`finish_avg`] divides afterwards.
pub(crate) fn reduce_bytes(dtype: DType, op: ReduceOp, dst: &mut [u8], src: &[u8]) {
    match dtype {
        DType::F32 => with_typed::<f32>(dst, src, &mut |d, s| reduce_slice(op, d, s)),
        DType::F64 => with_typed::<f64>(dst, src, &mut |d, s| reduce_slice(op, d, s)),
        DType::I32 => with_typed::<i32>(dst, src, &mut |d, s| reduce_slice(op, d, s)),
        DType::I64 => with_typed::<i64>(dst, src, &mut |d, s| reduce_slice(op, d, s)),
        DType::U8 => {
            let n = dst.len().min(src.len());
            reduce_slice(op, &mut dst[..n], &src[..n]);
        }
        DType::F16 => with_typed::<u16>(dst, src, &mut |d, s| reduce_f16(op, d, s)),
        DType::BF16 => with_typed::<u16>(dst, src, &mut |d, s| reduce_bf16(op, d, s)),
    }
}

fn div_slice<T: Arith>(d: &mut [T], n: usize) {
    for a in d.iter_mut() {
        *a = T::div_n(*a, n);
    }
}

/// Divides every element by `n` (the last step of `Avg`).
pub(crate) fn finish_avg(dtype: DType, buf: &mut [u8], n: usize) {
    if n <= 1 {
        return;
    }
    match dtype {
        DType::F32 => typed_mut::<f32>(buf, &mut |d| div_slice(d, n)),
        DType::F64 => typed_mut::<f64>(buf, &mut |d| div_slice(d, n)),
        DType::I32 => typed_mut::<i32>(buf, &mut |d| div_slice(d, n)),
        DType::I64 => typed_mut::<i64>(buf, &mut |d| div_slice(d, n)),
        DType::U8 => div_slice(buf, n),
        DType::F16 => typed_mut::<u16>(buf, &mut |d| {
            let mut a = [0f32; HALF_BLOCK];
            for dc in d.chunks_mut(HALF_BLOCK) {
                let m = dc.len();
                let dh: &mut [half::f16] = dc.reinterpret_cast_mut();
                dh.convert_to_f32_slice(&mut a[..m]);
                div_slice(&mut a[..m], n);
                dh.convert_from_f32_slice(&a[..m]);
            }
        }),
        DType::BF16 => typed_mut::<u16>(buf, &mut |d| {
            for x in d.iter_mut() {
                *x = f32_to_bf16(bf16_to_f32(*x) / n as f32);
            }
        }),
    }
}

/// Runs `f` on a typed view of `buf`, through an aligned copy if needed.
fn typed_mut<T: Copy>(buf: &mut [u8], f: &mut dyn FnMut(&mut [T])) {
    let size = std::mem::size_of::<T>();
    let len = buf.len() / size * size;
    let buf = &mut buf[..len];
    // SAFETY: T is a plain number type; align_to yields an aligned middle.
    let (p, m, _) = unsafe { buf.align_to_mut::<T>() };
    if p.is_empty() && std::mem::size_of_val(m) == len {
        f(m);
        return;
    }
    let mut words = vec![0u64; len.div_ceil(8)];
    u64_bytes_mut(&mut words)[..len].copy_from_slice(buf);
    // SAFETY: the u64 scratch is 8-byte aligned, enough for every T.
    let (_, m, _) = unsafe { u64_bytes_mut(&mut words)[..len].align_to_mut::<T>() };
    f(m);
    buf.copy_from_slice(&u64_bytes_mut(&mut words)[..len]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::as_bytes_mut;
    use half::{bf16, f16};

    #[test]
    fn bf16_rounding_is_nearest_even_and_matches_half() {
        for bits in [
            0x3f80_0000u32, // 1.0
            0x3f80_8000,    // halfway between two bf16, even below -> stays
            0x3f81_8000,    // halfway, odd below -> rounds up
            0x3f80_8001,    // just above halfway -> up
            0x7f7f_ffff,    // max f32 -> inf
            0xff80_0000,    // -inf
            0x0000_0001,    // denormal
        ] {
            let f = f32::from_bits(bits);
            assert_eq!(
                f32_to_bf16(f),
                bf16::from_f32(f).to_bits(),
                "bits {bits:#x}"
            );
        }
        assert!(bf16::from_bits(f32_to_bf16(f32::NAN)).is_nan());
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f81_8000)), 0x3f82);
    }

    #[test]
    fn f16_sum_is_computed_in_f32_and_rounded_once() {
        // 1 + 2^-11 is exactly halfway between f16 1.0 and its successor:
        // it must round to even (1.0).
        let mut d = vec![f16::from_f32(1.0).to_bits()];
        let s = vec![f16::from_f32(2f32.powi(-11)).to_bits()];
        reduce_bytes(DType::F16, ReduceOp::Sum, u16b(&mut d), &u16v(&s));
        assert_eq!(f16::from_bits(d[0]).to_f32(), 1.0);
        // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9: rounds up.
        let mut d = vec![f16::from_f32(1.0).to_bits()];
        let s = vec![f16::from_f32(3.0 * 2f32.powi(-11)).to_bits()];
        reduce_bytes(DType::F16, ReduceOp::Sum, u16b(&mut d), &u16v(&s));
        assert_eq!(f16::from_bits(d[0]).to_f32(), 1.0 + 2f32.powi(-9));
    }

    fn u16b(v: &mut [u16]) -> &mut [u8] {
        // SAFETY: test helper viewing u16 as bytes.
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), v.len() * 2) }
    }
    fn u16v(v: &[u16]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn integer_ops_wrap_and_avg_truncates() {
        let mut d = vec![i32::MAX, -7, 5];
        let mut s = vec![1i32, 2, -9];
        reduce_bytes(
            DType::I32,
            ReduceOp::Sum,
            as_bytes_mut(&mut d),
            as_bytes_mut(&mut s),
        );
        assert_eq!(d, vec![i32::MIN, -5, -4]);
        finish_avg(DType::I32, as_bytes_mut(&mut d), 2);
        assert_eq!(d, vec![i32::MIN / 2, -2, -2]);
        let mut u = vec![200u8, 3];
        reduce_bytes(DType::U8, ReduceOp::Product, &mut u, &[2, 4]);
        assert_eq!(u, vec![144, 12]);
    }

    #[test]
    fn misaligned_views_take_the_slow_path_with_the_same_result() {
        let vals: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
        let mut raw = vec![0u8; 4001];
        let mut src = vec![0u8; 4001];
        for (i, v) in vals.iter().enumerate() {
            raw[1 + 4 * i..5 + 4 * i].copy_from_slice(&v.to_ne_bytes());
            src[1 + 4 * i..5 + 4 * i].copy_from_slice(&(1.0f32).to_ne_bytes());
        }
        reduce_bytes(DType::F32, ReduceOp::Sum, &mut raw[1..], &src[1..]);
        for (i, v) in vals.iter().enumerate() {
            let mut b = [0u8; 4];
            b.copy_from_slice(&raw[1 + 4 * i..5 + 4 * i]);
            assert_eq!(f32::from_ne_bytes(b), v + 1.0);
        }
        finish_avg(DType::F32, &mut raw[1..], 2);
        let mut b = [0u8; 4];
        b.copy_from_slice(&raw[5..9]);
        assert_eq!(f32::from_ne_bytes(b), 0.75);
    }

    #[test]
    fn max_min_product_for_floats() {
        let mut d = vec![1.0f64, -2.0, 3.0];
        let mut s = vec![0.5f64, 4.0, 3.0];
        let mut m = d.clone();
        reduce_bytes(
            DType::F64,
            ReduceOp::Max,
            as_bytes_mut(&mut m),
            as_bytes_mut(&mut s),
        );
        assert_eq!(m, vec![1.0, 4.0, 3.0]);
        let mut m = d.clone();
        reduce_bytes(
            DType::F64,
            ReduceOp::Min,
            as_bytes_mut(&mut m),
            as_bytes_mut(&mut s),
        );
        assert_eq!(m, vec![0.5, -2.0, 3.0]);
        reduce_bytes(
            DType::F64,
            ReduceOp::Product,
            as_bytes_mut(&mut d),
            as_bytes_mut(&mut s),
        );
        assert_eq!(d, vec![0.5, -8.0, 9.0]);
    }
}
