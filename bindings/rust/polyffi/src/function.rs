//! [`Function`], the packed-function handle: Clone = retain, Drop = free, Send + Sync.
use std::ffi::{c_void, CString};
use std::fmt;
use std::os::raw::c_int;
use std::ptr::NonNull;

use polyffi_sys as sys;
use sys::TVMValue;

use crate::errors::{check_call, Error, Result};
use crate::value::{with_c_str, with_packed_slice, FromRet, IntoArgs, Value, NULL, RVALUE_REF};

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

    /// Calls with a slice of values (up to 8 arguments are packed on the stack).
    #[inline]
    pub fn call(&self, args: &[Value]) -> Result<Value> {
        with_packed_slice(args, |values, codes| {
            self.call_raw_typed::<Value>(values, codes)
        })?
    }

    /// Typed call: `f.invoke::<i64>((1, 2, 3))`. Arguments are a tuple of up to 8 values
    /// implementing [`ToArg`](crate::ToArg), packed on the stack; scalar arguments and scalar
    /// results never allocate.
    #[inline]
    pub fn invoke<R: FromRet>(&self, args: impl IntoArgs) -> Result<R> {
        args.with_packed(|values, codes| self.call_raw_typed::<R>(values, codes))?
    }

    /// Calls with already packed values.
    pub fn call_raw(&self, values: &mut [TVMValue], codes: &mut [c_int]) -> Result<Value> {
        self.call_raw_typed::<Value>(values, codes)
    }

    /// Typed call with a string result written into `out` (cleared first), reusing its buffer:
    /// once `out` has the capacity, a call with short string arguments allocates nothing.
    /// A result that is not a string is a TypeError and leaves `out` empty.
    #[inline]
    pub fn invoke_into_string(&self, args: impl IntoArgs, out: &mut String) -> Result<()> {
        out.clear();
        args.with_packed(|values, codes| {
            let (ret, code) = self.call_packed_raw(values, codes)?;
            // SAFETY: the owned result of the call just made.
            unsafe { crate::value::string_into(ret, code, out) }
        })?
    }

    #[inline(always)]
    fn call_raw_typed<R: FromRet>(
        &self,
        values: &mut [TVMValue],
        codes: &mut [c_int],
    ) -> Result<R> {
        let (ret, ret_code) = self.call_packed_raw(values, codes)?;
        // SAFETY: ret is the owned result of the call just made.
        unsafe { R::from_ret(ret, ret_code) }
    }

    /// The call itself: the raw owned result, or the runtime's error.
    #[inline(always)]
    fn call_packed_raw(
        &self,
        values: &mut [TVMValue],
        codes: &mut [c_int],
    ) -> Result<(TVMValue, c_int)> {
        debug_assert_eq!(values.len(), codes.len());
        let n =
            c_int::try_from(values.len()).map_err(|_| Error::value_error("too many arguments"))?;
        // The direct contract: the slot holds kTVMNullptr / NULL before every call.
        let mut ret = TVMValue {
            v_handle: std::ptr::null_mut(),
        };
        let mut ret_code: c_int = NULL;
        let status = match self.entry {
            // SAFETY: the entry of this live handle; values/codes hold n packed arguments
            // whose storage outlives the call; the slot is pre-set as required.
            Some(entry) => unsafe {
                entry(
                    self.resource,
                    values.as_ptr(),
                    codes.as_ptr(),
                    n,
                    &mut ret,
                    &mut ret_code,
                )
            },
            // SAFETY: as above; TVMFuncCall checks the handle itself.
            None => unsafe {
                sys::TVMFuncCall(
                    self.as_raw(),
                    values.as_mut_ptr(),
                    codes.as_mut_ptr(),
                    n,
                    &mut ret,
                    &mut ret_code,
                )
            },
        };
        check_call(status)?;
        // A direct callee's slot arrives as written: an rvalue reference is not a result
        // (TVMFuncCall refuses it too; it owns nothing, so nothing is released). A borrowed
        // tensor view is taken as TVMFuncCall hands it on from classic callees (testing.echo of
        // a view): its descriptor is copied at once, its data stays the caller's.
        if ret_code == RVALUE_REF {
            return Err(refused_result(ret_code));
        }
        check_call(status)?;
        Ok((ret, ret_code))
    }

    /// Wraps a Rust closure as a runtime function. The closure is boxed and handed to the
    /// runtime as the resource; the runtime's finalizer drops it exactly once, on whichever
    /// thread releases the last reference. A panic inside becomes an Err of kind `RustPanic`;
    /// an `Err(e)` reaches the caller with `e.kind()` kept.
    pub fn from_closure<F>(f: F) -> Result<Function>
    where
        F: Fn(&[Value]) -> Result<Value> + Send + Sync + 'static,
    {
        crate::callback::make_function(crate::callback::SliceFn(f))
    }

    /// Wraps a typed Rust closure of up to 4 arguments (`i64`, `f64`, `bool`, `String`,
    /// `Function`, `NDArray`, `Value`, ...) returning `Result<R>` with `R: Into<Value>`:
    /// `Function::from_typed(|x: i64, y: i64| Ok(x + y))`. Scalars are unpacked without going
    /// through [`Value`]; a wrong argument type or count is a TypeError naming it. Panics and
    /// errors behave as in [`from_closure`](Self::from_closure).
    pub fn from_typed<F, Args>(f: F) -> Result<Function>
    where
        F: crate::callback::TypedFn<Args>,
        Args: 'static,
    {
        crate::callback::make_function(crate::callback::Typed(f, std::marker::PhantomData))
    }

    /// Registers this function as the global `name` (the registry keeps its own reference).
    /// Without `override_`, a taken name is a ValueError.
    pub fn register_global(&self, name: &str, override_: bool) -> Result<()> {
        let c_name = CString::new(name)?;
        // SAFETY: borrowed name and handle; the registry retains the function.
        check_call(unsafe {
            sys::TVMFuncRegisterGlobal(c_name.as_ptr(), self.as_raw(), override_ as c_int)
        })
    }
}

#[cold]
#[inline(never)]
fn refused_result(code: c_int) -> Error {
    Error::type_error(format!(
        "callee returned an unsupported value ({}); a function result must own what it holds",
        crate::value::type_code_name(code)
    ))
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
