//! [`Function`], the packed-function handle: Clone = retain, Drop = free, Send + Sync. The handle
//! itself (ownership, lookup, its direct entry) is in `handle`, calls with values in `value`;
//! this module makes functions of Rust closures and registers them.
use std::ffi::CString;
use std::os::raw::c_int;

use polyffi_sys as sys;

use crate::errors::{check_call, Result};
pub use crate::handle::Function;
use crate::value::Value;

impl Function {
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
