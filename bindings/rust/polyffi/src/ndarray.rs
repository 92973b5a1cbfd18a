//! [`NDArray`] (DLPack tensors owned by the runtime) and zero-copy exchange with the `ndarray`
//! crate: views of an NDArray's memory, and `ndarray` arrays passed as call arguments without
//! copying (as borrowed `DLTensor` views).
use std::ffi::c_void;
use std::fmt;
use std::os::raw::c_int;
use std::ptr::NonNull;

use polyffi_sys as sys;

use crate::errors::{check_call, Error, Result};
pub use crate::handle::NDArray;
use crate::value::{DataType, Device};

/// Element types with a DLPack dtype.
///
/// # Safety
/// `DTYPE` must describe `Self`'s memory exactly.
pub unsafe trait Element: Copy + Send + Sync + 'static {
    const DTYPE: DataType;
}

macro_rules! element {
    ($($t:ty => $code:expr, $bits:literal);* $(;)?) => {$(
        unsafe impl Element for $t {
            const DTYPE: DataType = DataType::new($code as u8, $bits, 1);
        }
    )*};
}

element! {
    f32 => sys::kDLFloat, 32; f64 => sys::kDLFloat, 64;
    i8 => sys::kDLInt, 8; i16 => sys::kDLInt, 16; i32 => sys::kDLInt, 32; i64 => sys::kDLInt, 64;
    u8 => sys::kDLUInt, 8; u16 => sys::kDLUInt, 16; u32 => sys::kDLUInt, 32; u64 => sys::kDLUInt, 64;
}

impl NDArray {
    fn tensor(&self) -> &sys::DLTensor {
        // SAFETY: the handle is live for as long as self.
        unsafe { &*self.as_raw() }
    }

    /// A new CPU array (64-byte aligned). Its contents are unspecified until written.
    pub fn empty(shape: &[i64], dtype: DataType, device: Device) -> Result<NDArray> {
        crate::library::ensure()?;
        let ndim = c_int::try_from(shape.len()).map_err(|_| Error::value_error("too many dims"))?;
        let mut out: sys::TVMArrayHandle = std::ptr::null_mut();
        // SAFETY: borrowed shape; out receives an owned array.
        check_call(unsafe {
            sys::TVMArrayAlloc(
                shape.as_ptr(),
                ndim,
                dtype.code.into(),
                dtype.bits.into(),
                dtype.lanes.into(),
                device.device_type,
                device.device_id,
                &mut out,
            )
        })?;
        NonNull::new(out)
            // SAFETY: an owned array.
            .map(|h| unsafe { NDArray::from_raw(h) })
            .ok_or_else(|| Error::new("InternalError", "TVMArrayAlloc returned NULL"))
    }

    /// A new CPU array holding a copy of `data` in the given shape.
    pub fn from_slice<T: Element>(data: &[T], shape: &[i64]) -> Result<NDArray> {
        let count = checked_count(shape)?;
        if count != data.len() {
            return Err(Error::value_error(format!(
                "shape {shape:?} holds {count} elements but the slice has {}",
                data.len()
            )));
        }
        let mut out = NDArray::empty(shape, T::DTYPE, Device::cpu(0))?;
        out.copy_from_slice(data)?;
        Ok(out)
    }

    /// A new CPU array of `shape` and `dtype` holding a copy of raw `bytes`.
    pub fn from_bytes(bytes: &[u8], shape: &[i64], dtype: DataType) -> Result<NDArray> {
        checked_count(shape)?;
        let mut out = NDArray::empty(shape, dtype, Device::cpu(0))?;
        out.copy_from_bytes(bytes)?;
        Ok(out)
    }

    pub fn shape(&self) -> &[i64] {
        let t = self.tensor();
        if t.ndim <= 0 || t.shape.is_null() {
            &[]
        } else {
            // SAFETY: a DLTensor's shape has ndim entries.
            unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) }
        }
    }

    /// Strides in elements, None when compact row-major.
    pub fn strides(&self) -> Option<&[i64]> {
        let t = self.tensor();
        if t.strides.is_null() || t.ndim <= 0 {
            None
        } else {
            // SAFETY: non-NULL strides have ndim entries.
            Some(unsafe { std::slice::from_raw_parts(t.strides, t.ndim as usize) })
        }
    }

    pub fn ndim(&self) -> usize {
        self.shape().len()
    }
    pub fn dtype(&self) -> DataType {
        DataType::from_raw(self.tensor().dtype)
    }
    pub fn device(&self) -> Device {
        Device::from_raw(self.tensor().device)
    }
    pub fn len(&self) -> usize {
        self.shape().iter().map(|&d| d.max(0) as usize).product()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn size_bytes(&self) -> usize {
        self.len() * self.dtype().size_bytes()
    }

    /// Pointer to the first element (data + byte_offset).
    pub fn data_ptr(&self) -> *mut c_void {
        let t = self.tensor();
        (t.data as *mut u8).wrapping_add(t.byte_offset as usize) as *mut c_void
    }

    /// Compact row-major (NULL strides, or strides equal to the compact ones).
    pub fn is_contiguous(&self) -> bool {
        let Some(strides) = self.strides() else {
            return true;
        };
        let mut expected = 1i64;
        for (&dim, &stride) in self.shape().iter().zip(strides).rev() {
            if dim != 1 && stride != expected {
                return false;
            }
            expected *= dim;
        }
        true
    }

    fn check_host_access<T: Element>(&self) -> Result<()> {
        if self.dtype() != T::DTYPE {
            return Err(Error::type_error(format!(
                "array dtype is {} but the element type is {}",
                self.dtype(),
                T::DTYPE
            )));
        }
        if !matches!(self.device().device_type, 1 | 3) {
            return Err(Error::value_error(format!(
                "array lives on {}",
                self.device()
            )));
        }
        if !self.is_contiguous() {
            return Err(Error::value_error("array is not contiguous"));
        }
        Ok(())
    }

    /// The elements, borrowed (CPU, compact, dtype matching `T`; TypeError / ValueError else).
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        self.check_host_access::<T>()?;
        let n = self.len();
        if n == 0 {
            return Ok(&[]);
        }
        // SAFETY: checked dtype, device and layout; the runtime aligns CPU data to 64 bytes.
        Ok(unsafe { std::slice::from_raw_parts(self.data_ptr() as *const T, n) })
    }

    /// The elements, mutably borrowed.
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T]> {
        self.check_host_access::<T>()?;
        let n = self.len();
        if n == 0 {
            return Ok(&mut []);
        }
        // SAFETY: as in as_slice; &mut self makes this the only Rust access.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.data_ptr() as *mut T, n) })
    }

    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.as_slice::<T>().map(<[T]>::to_vec)
    }

    /// The raw bytes of a CPU array (compact).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        if !self.is_contiguous() || !matches!(self.device().device_type, 1 | 3) {
            return Err(Error::value_error("to_bytes needs a compact CPU array"));
        }
        let n = self.size_bytes();
        if n == 0 {
            return Ok(Vec::new());
        }
        // SAFETY: compact CPU memory of n bytes.
        Ok(unsafe { std::slice::from_raw_parts(self.data_ptr() as *const u8, n) }.to_vec())
    }

    /// Overwrites the elements with `data` (same count and dtype).
    pub fn copy_from_slice<T: Element>(&mut self, data: &[T]) -> Result<()> {
        if self.dtype() != T::DTYPE {
            return Err(Error::type_error(format!(
                "array dtype is {} but the slice holds {}",
                self.dtype(),
                T::DTYPE
            )));
        }
        let dst = self.as_mut_slice::<T>()?;
        if dst.len() != data.len() {
            return Err(Error::value_error(format!(
                "array holds {} elements but the slice has {}",
                dst.len(),
                data.len()
            )));
        }
        dst.copy_from_slice(data);
        Ok(())
    }

    /// Overwrites the array with raw bytes (e.g. a little-endian file written by numpy's
    /// `tofile`); `bytes` must be exactly [`size_bytes`](Self::size_bytes) long.
    pub fn copy_from_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.len() != self.size_bytes() {
            return Err(Error::value_error(format!(
                "array of shape {:?} {} holds {} bytes but {} were given",
                self.shape(),
                self.dtype(),
                self.size_bytes(),
                bytes.len()
            )));
        }
        // SAFETY: borrowed tensor; the runtime only reads `bytes` (the C signature is not const).
        check_call(unsafe {
            sys::TVMArrayCopyFromBytes(self.as_raw(), bytes.as_ptr() as *mut c_void, bytes.len())
        })
    }

    /// Copies `src` into this array (same shape and dtype).
    pub fn copy_from(&mut self, src: &NDArray) -> Result<()> {
        // SAFETY: both borrowed tensors.
        check_call(unsafe {
            sys::TVMArrayCopyFromTo(src.as_raw(), self.as_raw(), std::ptr::null_mut())
        })
    }
}

fn checked_count(shape: &[i64]) -> Result<usize> {
    shape.iter().try_fold(1usize, |acc, &d| {
        usize::try_from(d)
            .ok()
            .and_then(|d| acc.checked_mul(d))
            .ok_or_else(|| Error::value_error(format!("bad shape {shape:?}")))
    })
}

impl fmt::Debug for NDArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NDArray(shape={:?}, dtype={}, device={}{})",
            self.shape(),
            self.dtype(),
            self.device(),
            if self.is_owned() { "" } else { ", borrowed" }
        )
    }
}

#[cfg(feature = "ndarray")]
mod with_ndarray {
    use super::*;
    use crate::handle::DLTENSOR;
    use crate::value::ToArg;
    use ndarray::{ArrayBase, ArrayViewD, ArrayViewMutD, Dimension, IxDyn, RawData};
    use polyffi_sys::TVMValue;

    fn dims(shape: &[i64]) -> Vec<usize> {
        shape.iter().map(|&d| d.max(0) as usize).collect()
    }

    impl NDArray {
        /// A zero-copy `ndarray` view of this array's memory.
        pub fn view<T: Element>(&self) -> Result<ArrayViewD<'_, T>> {
            let data = self.as_slice::<T>()?;
            ArrayViewD::from_shape(IxDyn(&dims(self.shape())), data)
                .map_err(|e| Error::value_error(e.to_string()))
        }

        /// A zero-copy mutable `ndarray` view of this array's memory.
        pub fn view_mut<T: Element>(&mut self) -> Result<ArrayViewMutD<'_, T>> {
            let shape = dims(self.shape());
            let data = self.as_mut_slice::<T>()?;
            ArrayViewMutD::from_shape(IxDyn(&shape), data)
                .map_err(|e| Error::value_error(e.to_string()))
        }

        /// A new CPU array holding a copy of an `ndarray` array (any layout).
        pub fn from_ndarray<S, D, T>(a: &ArrayBase<S, D>) -> Result<NDArray>
        where
            S: ndarray::Data<Elem = T>,
            D: Dimension,
            T: Element,
        {
            let shape: Vec<i64> = a.shape().iter().map(|&d| d as i64).collect();
            let mut out = NDArray::empty(&shape, T::DTYPE, Device::cpu(0))?;
            let dst = out.as_mut_slice::<T>()?;
            for (d, s) in dst.iter_mut().zip(a.iter()) {
                *d = *s;
            }
            Ok(out)
        }
    }

    /// A borrowed `DLTensor` describing an `ndarray` array, alive while a call runs.
    pub struct TensorHolder {
        tensor: sys::DLTensor,
        _shape: Vec<i64>,
        _strides: Vec<i64>,
    }

    /// `ndarray` arrays and views pass as borrowed `DLTensor` views (kTVMDLTensorHandle), the
    /// callee reading and writing the very memory (pass an `ArrayViewMutD` for outputs).
    impl<S, D> ToArg for ArrayBase<S, D>
    where
        S: RawData,
        S::Elem: Element,
        D: Dimension,
    {
        type Holder = TensorHolder;

        fn prepare(&self) -> Result<TensorHolder> {
            let mut shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
            let mut strides: Vec<i64> = self.strides().iter().map(|&s| s as i64).collect();
            let compact = self.is_standard_layout();
            let tensor = sys::DLTensor {
                data: self.as_ptr() as *mut c_void,
                device: Device::cpu(0).to_raw(),
                ndim: shape.len() as c_int,
                dtype: <S::Elem as Element>::DTYPE.to_raw(),
                shape: shape.as_mut_ptr(),
                strides: if compact {
                    std::ptr::null_mut()
                } else {
                    strides.as_mut_ptr()
                },
                byte_offset: 0,
            };
            Ok(TensorHolder {
                tensor,
                _shape: shape,
                _strides: strides,
            })
        }

        fn raw(&self, h: &TensorHolder) -> (TVMValue, c_int) {
            (
                TVMValue {
                    v_handle: &h.tensor as *const _ as *mut c_void,
                },
                DLTENSOR,
            )
        }
    }
}
