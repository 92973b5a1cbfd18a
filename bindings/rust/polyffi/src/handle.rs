//! The owning handles everything else is built on: [`Function`], [`Module`] and [`NDArray`]
//! (ownership, retain / release, a function's direct entry and its one raw call), with the
//! type codes and the small helpers every layer above shares. Values and their conversions
//! (`value`) sit on top of this module; calls with values, closures, modules and arrays on top
//! of those.
use std::cell::Cell;
use std::ffi::{c_void, CString};
use std::fmt;
use std::os::raw::c_int;
use std::ptr::NonNull;

use polyffi_sys as sys;
use sys::TVMValue;

use crate::errors::{check_call, Error, Result};

// Type codes as c_int, the type TVMFuncCall takes them in.
pub(crate) const INT: c_int = sys::kTVMArgInt as c_int;
pub(crate) const UINT: c_int = sys::kDLUInt as c_int;
pub(crate) const FLOAT: c_int = sys::kTVMArgFloat as c_int;
pub(crate) const OPAQUE: c_int = sys::kTVMOpaqueHandle as c_int;
pub(crate) const NULL: c_int = sys::kTVMNullptr as c_int;
pub(crate) const DTYPE: c_int = sys::kTVMDataType as c_int;
pub(crate) const DEVICE: c_int = sys::kDLDevice as c_int;
pub(crate) const DLTENSOR: c_int = sys::kTVMDLTensorHandle as c_int;
pub(crate) const OBJECT: c_int = sys::kTVMObjectHandle as c_int;
pub(crate) const MODULE: c_int = sys::kTVMModuleHandle as c_int;
pub(crate) const FUNC: c_int = sys::kTVMPackedFuncHandle as c_int;
pub(crate) const STR: c_int = sys::kTVMStr as c_int;
pub(crate) const BYTES: c_int = sys::kTVMBytes as c_int;
pub(crate) const NDARRAY: c_int = sys::kTVMNDArrayHandle as c_int;
pub(crate) const RVALUE_REF: c_int = sys::kTVMObjectRValueRefArg as c_int;
pub(crate) const BOOL: c_int = sys::kTVMArgBool as c_int;

/// A core global function looked up once per process (e.g. `runtime.ArraySize`).
macro_rules! core_global {
    ($name:literal) => {{
        static F: std::sync::OnceLock<$crate::handle::Function> = std::sync::OnceLock::new();
        match F.get() {
            Some(f) => Ok(f),
            None => $crate::handle::Function::global($name).map(|f| F.get_or_init(|| f)),
        }
    }};
}
pub(crate) use core_global;

// ---- Helpers ---------------------------------------------------------------------------------

/// Runs `f` on a NUL-terminated copy of `s`: on the stack for short strings (names of globals
/// and functions), on the heap for long ones. A NUL inside `s` is a ValueError.
#[inline]
pub(crate) fn with_c_str<R>(
    s: &str,
    f: impl FnOnce(*const std::os::raw::c_char) -> R,
) -> Result<R> {
    let bytes = s.as_bytes();
    if let Some(i) = bytes.iter().position(|&b| b == 0) {
        return Err(Error::value_error(format!(
            "string contains a NUL byte at {i}"
        )));
    }
    if bytes.len() < 128 {
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 128];
        // SAFETY: len + 1 <= 128 bytes written, then read as one C string.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.as_mut_ptr() as *mut u8, bytes.len());
            buf[bytes.len()].write(0);
        }
        Ok(f(buf.as_ptr() as *const _))
    } else {
        let c = CString::new(bytes)?;
        Ok(f(c.as_ptr()))
    }
}

// ---- Lent results ------------------------------------------------------------------------------

thread_local! {
    /// Set while a string or bytes result that still lives in this thread's return storage is
    /// lent to a caller's closure (`Function::invoke_with_str` / `invoke_with_bytes`). Any call
    /// into the runtime may replace that storage, so every call made through this crate on the
    /// thread meanwhile is refused (`call_slot`, the path every function call of this crate
    /// takes; the crate's other runtime calls, on handles, arrays and the registry, never write
    /// the return storage).
    static RESULT_LENT: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread's return storage as lent until dropped (also when the closure panics).
pub(crate) struct Lent(());

impl Lent {
    #[inline(always)]
    pub(crate) fn start() -> Lent {
        RESULT_LENT.set(true);
        Lent(())
    }
}

impl Drop for Lent {
    #[inline(always)]
    fn drop(&mut self) {
        RESULT_LENT.set(false);
    }
}

/// A call made while a result is lent: refused with a RuntimeError, nothing called.
#[cold]
#[inline(never)]
fn refuse_while_lent() -> c_int {
    crate::callback::set_last_error(&Error::new(
        "RuntimeError",
        "a call was made while a borrowed string or bytes result is lent to a closure \
         (invoke_with_str / invoke_with_bytes); the call would overwrite it: copy what you need \
         and make the call after the closure returns",
    ));
    -1
}

// ---- Function ----------------------------------------------------------------------------------

/// A runtime function: a global, a module's function, a returned closure or a Rust closure.
///
/// It keeps the function's direct entry (`TVMFuncGetDirect`: a function pointer and its
/// resource, valid while the handle is held) and calls through it: the handle is known to be a
/// live function and the arguments are packed by this crate, so the checks `TVMFuncCall` makes
/// have nothing to find.
pub struct Function {
    handle: NonNull<c_void>,
    entry: sys::TVMDirectCFunc,
    resource: *mut c_void,
}

// SAFETY: function objects are atomically reference counted and callable from any thread
// (docs/spec/abi.md section 8, threads); Rust closures wrapped as functions are required to be
// Send + Sync.
unsafe impl Send for Function {}
unsafe impl Sync for Function {}

impl Function {
    /// Takes over an owned function handle.
    ///
    /// # Safety
    /// `handle` must be an owned reference to a function object.
    pub unsafe fn from_raw(handle: NonNull<c_void>) -> Self {
        let mut entry: sys::TVMDirectCFunc = None;
        let mut resource: *mut c_void = std::ptr::null_mut();
        // A handle the runtime refuses (not a function) keeps `entry` None: calls then go
        // through TVMFuncCall, which reports the error.
        if sys::TVMFuncGetDirect(handle.as_ptr(), &mut entry, &mut resource) != 0 {
            entry = None;
            resource = std::ptr::null_mut();
        }
        Function {
            handle,
            entry,
            resource,
        }
    }

    /// The handle, still owned by `self`.
    pub fn as_raw(&self) -> *mut c_void {
        self.handle.as_ptr()
    }

    /// Gives up ownership of the handle (release it with `TVMFuncFree`).
    pub fn into_raw(self) -> *mut c_void {
        let h = self.as_raw();
        std::mem::forget(self);
        h
    }

    /// The global function `name`, or None when nothing is registered under it.
    pub fn get_global(name: &str) -> Option<Function> {
        Self::lookup(name).ok().flatten()
    }

    /// The global function `name`; ValueError `Cannot find global function NAME` when missing.
    pub fn global(name: &str) -> Result<Function> {
        Self::lookup(name)?
            .ok_or_else(|| Error::value_error(format!("Cannot find global function {name}")))
    }

    fn lookup(name: &str) -> Result<Option<Function>> {
        crate::library::ensure()?;
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: NUL-terminated name; out-parameter receives an owned handle or NULL.
        check_call(with_c_str(name, |p| unsafe {
            sys::TVMFuncGetGlobal(p, &mut out)
        })?)?;
        // SAFETY: an owned function handle.
        Ok(NonNull::new(out).map(|h| unsafe { Function::from_raw(h) }))
    }

    /// One call through the direct entry (`TVMFuncCall` for a handle without one) into the
    /// caller's result slot, which it pre-sets to `kTVMNullptr`: the status and the raw result.
    /// Value conversions on either side live in `value`.
    ///
    /// # Safety
    /// `values`/`codes` hold `values.len()` packed arguments that outlive the call.
    #[inline(always)]
    pub(crate) unsafe fn call_slot(
        &self,
        values: &mut [TVMValue],
        codes: &mut [c_int],
        n: c_int,
        ret: &mut TVMValue,
        ret_code: &mut c_int,
    ) -> c_int {
        debug_assert_eq!(values.len(), codes.len());
        // The direct contract: the slot holds kTVMNullptr / NULL before every call.
        ret.v_handle = std::ptr::null_mut();
        *ret_code = NULL;
        if RESULT_LENT.get() {
            return refuse_while_lent();
        }
        match self.entry {
            // The entry of this live handle; the slot is pre-set as required.
            Some(entry) => entry(
                self.resource,
                values.as_ptr(),
                codes.as_ptr(),
                n,
                ret,
                ret_code,
            ),
            // TVMFuncCall checks the handle itself.
            None => sys::TVMFuncCall(
                self.as_raw(),
                values.as_mut_ptr(),
                codes.as_mut_ptr(),
                n,
                ret,
                ret_code,
            ),
        }
    }
}

impl Clone for Function {
    fn clone(&self) -> Self {
        // SAFETY: a live function handle is an object handle.
        unsafe { sys::TVMObjectRetain(self.as_raw()) };
        // The entry stays valid: it belongs to the same function object.
        Function {
            handle: self.handle,
            entry: self.entry,
            resource: self.resource,
        }
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        // SAFETY: we own one reference; may run a Rust closure's finalizer.
        unsafe { sys::TVMFuncFree(self.as_raw()) };
    }
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Function({:p})", self.handle)
    }
}

// ---- Module ------------------------------------------------------------------------------------

/// A runtime module: a loaded shared library, a plugin's module, a graph executor, ...
/// Clone = retain, Drop = free.
pub struct Module {
    handle: NonNull<c_void>,
}

// SAFETY: modules are reference-counted runtime objects usable from any thread.
unsafe impl Send for Module {}
unsafe impl Sync for Module {}

impl Module {
    /// Takes over an owned module handle.
    ///
    /// # Safety
    /// `handle` must be an owned reference to a module object.
    pub unsafe fn from_raw(handle: NonNull<c_void>) -> Self {
        Module { handle }
    }

    pub fn as_raw(&self) -> *mut c_void {
        self.handle.as_ptr()
    }
}

impl Clone for Module {
    fn clone(&self) -> Self {
        // SAFETY: a live module handle is an object handle.
        unsafe { sys::TVMObjectRetain(self.as_raw()) };
        Module {
            handle: self.handle,
        }
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { sys::TVMModFree(self.as_raw()) };
    }
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Module({:p})", self.handle)
    }
}

// ---- NDArray -----------------------------------------------------------------------------------

/// An n-dimensional array. Owned arrays (made here or returned by calls) are reference counted
/// by the runtime (Clone = retain, Drop = free). Borrowed views (a `DLTensor*` a callee returned
/// or a callback received) are valid only while their producer keeps them alive.
pub struct NDArray {
    handle: NonNull<sys::DLTensor>,
    owned: bool,
    /// For borrowed views: our own copy of the descriptor (the producer's DLTensor struct may
    /// be a temporary); `handle` points into it. Only the data stays borrowed.
    _view: Option<Box<ViewDesc>>,
}

struct ViewDesc {
    tensor: sys::DLTensor,
    _shape: Vec<i64>,
    _strides: Option<Vec<i64>>,
}

// SAFETY: the runtime's arrays are reference counted atomically; element access goes through
// &self / &mut self, so Rust's borrow rules govern data races on the memory.
unsafe impl Send for NDArray {}
unsafe impl Sync for NDArray {}

impl NDArray {
    /// Takes over an owned array handle (`kTVMNDArrayHandle`).
    ///
    /// # Safety
    /// `handle` must be an owned NDArray reference.
    pub unsafe fn from_raw(handle: NonNull<sys::DLTensor>) -> Self {
        NDArray {
            handle,
            owned: true,
            _view: None,
        }
    }

    /// Wraps a borrowed `DLTensor*` without taking ownership.
    ///
    /// # Safety
    /// The tensor must stay valid as long as the NDArray (and its clones) are used.
    pub unsafe fn from_borrowed(handle: NonNull<sys::DLTensor>) -> Self {
        let t = handle.as_ref();
        let ndim = usize::try_from(t.ndim).unwrap_or(0);
        let copy = |p: *const i64| {
            if p.is_null() || ndim == 0 {
                None
            } else {
                Some(std::slice::from_raw_parts(p, ndim).to_vec())
            }
        };
        let mut shape = copy(t.shape).unwrap_or_default();
        let mut strides = copy(t.strides);
        let mut tensor = *t;
        tensor.ndim = shape.len() as c_int;
        tensor.shape = if shape.is_empty() {
            std::ptr::null_mut()
        } else {
            shape.as_mut_ptr()
        };
        tensor.strides = strides
            .as_mut()
            .map_or(std::ptr::null_mut(), |s| s.as_mut_ptr());
        let mut desc = Box::new(ViewDesc {
            tensor,
            _shape: shape,
            _strides: strides,
        });
        let handle = NonNull::from(&mut desc.tensor);
        NDArray {
            handle,
            owned: false,
            _view: Some(desc),
        }
    }

    /// The `DLTensor*`, still owned by `self`.
    pub fn as_raw(&self) -> *mut sys::DLTensor {
        self.handle.as_ptr()
    }

    /// Whether the runtime owns this array (false: a borrowed view).
    pub fn is_owned(&self) -> bool {
        self.owned
    }

    pub(crate) fn type_code(&self) -> c_int {
        if self.owned {
            NDARRAY
        } else {
            DLTENSOR
        }
    }
}

impl Clone for NDArray {
    fn clone(&self) -> Self {
        if !self.owned {
            // SAFETY: our own descriptor copy is valid; the data stays borrowed as before.
            return unsafe { NDArray::from_borrowed(self.handle) };
        }
        // runtime.NDArrayObjectHandle gives the object around an owned array as a borrowed
        // pointer; one more reference to it is released later through TVMArrayFree.
        let f = match core_global!("runtime.NDArrayObjectHandle") {
            Ok(f) => f,
            Err(e) => panic!("polyffi: cannot retain an NDArray: {e}"),
        };
        let mut values = [TVMValue {
            v_handle: self.as_raw() as *mut c_void,
        }];
        let mut codes = [NDARRAY];
        let mut ret = TVMValue { v_int64: 0 };
        let mut ret_code = NULL;
        // SAFETY: one packed argument, this live array; the result is a plain pointer.
        let status = unsafe { f.call_slot(&mut values, &mut codes, 1, &mut ret, &mut ret_code) };
        if let Err(e) = check_call(status) {
            panic!("polyffi: cannot retain an NDArray: {e}");
        }
        match (ret_code, unsafe { ret.v_handle }) {
            (OPAQUE, p) if !p.is_null() => {
                // SAFETY: p is the live object that owns this array.
                unsafe { sys::TVMObjectRetain(p) };
                NDArray {
                    handle: self.handle,
                    owned: true,
                    _view: None,
                }
            }
            (code, _) => panic!("polyffi: runtime.NDArrayObjectHandle gave type code {code}"),
        }
    }
}

impl Drop for NDArray {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: we own one reference.
            unsafe { sys::TVMArrayFree(self.as_raw()) };
        }
    }
}
