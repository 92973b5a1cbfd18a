//! Rust closures as runtime functions: the direct-function trampoline (`TVMFuncCreateDirect`)
//! and the finalizer.
//!
//! The closure is boxed and passed as `resource_handle`; the finalizer drops the box exactly
//! once. The trampoline writes the closure's result straight into the caller's slot: plain
//! values as they are, strings and bytes through `TVMDirectReturnString`, objects with their one
//! reference handed over; errors go through the last-error convention. Nothing unwinds across the C ABI: panics in the closure (and in its Drop) are caught
//! and become an error of kind `RustPanic`.
use std::any::Any;
use std::ffi::{c_void, CString};
use std::mem::MaybeUninit;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

use polyffi_sys as sys;
use sys::TVMValue;

use crate::errors::{check_call, Error, Result};
use crate::handle::Function;
use crate::value::Value;

/// The caller's result slot a direct function writes into (kTVMNullptr on entry).
#[derive(Copy, Clone)]
pub struct ReturnSlot {
    value: *mut TVMValue,
    code: *mut c_int,
}

impl ReturnSlot {
    #[inline(always)]
    unsafe fn write(self, value: TVMValue, code: c_int) {
        *self.value = value;
        *self.code = code;
    }
}

/// What a trampoline calls: unpack the packed arguments, run, set the return value.
pub trait PackedCall: Send + Sync + 'static {
    /// # Safety
    /// `args`/`codes` hold `n` borrowed arguments and `ret` is the caller's result slot.
    unsafe fn call_packed(
        &self,
        args: *const TVMValue,
        codes: *const c_int,
        n: usize,
        ret: ReturnSlot,
    ) -> Result<()>;
}

/// A `Fn(&[Value]) -> Result<Value>` closure.
pub(crate) struct SliceFn<F>(pub F);

impl<F> PackedCall for SliceFn<F>
where
    F: Fn(&[Value]) -> Result<Value> + Send + Sync + 'static,
{
    #[inline(always)]
    unsafe fn call_packed(
        &self,
        args: *const TVMValue,
        codes: *const c_int,
        n: usize,
        ret: ReturnSlot,
    ) -> Result<()> {
        call_closure(&self.0, args, codes, n, ret)
    }
}

pub(crate) fn make_function<F>(f: F) -> Result<Function>
where
    F: PackedCall,
{
    crate::library::ensure()?;
    let resource = Box::into_raw(Box::new(f)) as *mut c_void;
    let mut out: *mut c_void = std::ptr::null_mut();
    // SAFETY: the runtime owns `resource` from here on: its finalizer runs exactly once, also
    // when this call fails (c_direct_api.h), so the box is never leaked nor freed twice.
    let status = unsafe {
        sys::TVMFuncCreateDirect(
            Some(trampoline::<F>),
            resource,
            Some(finalizer::<F>),
            &mut out,
        )
    };
    check_call(status)?;
    NonNull::new(out)
        .map(|h| unsafe { Function::from_raw(h) })
        .ok_or_else(|| Error::new("InternalError", "TVMFuncCreateDirect returned NULL"))
}

/// The first `len` slots of a stack buffer of callback arguments, dropped on every exit.
struct Initialised<'a, const N: usize> {
    slots: &'a mut [MaybeUninit<Value>; N],
    len: usize,
}

impl<const N: usize> Initialised<'_, N> {
    fn as_slice(&self) -> &[Value] {
        // SAFETY: the first `len` slots are initialised.
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr() as *const Value, self.len) }
    }
}

impl<const N: usize> Drop for Initialised<'_, N> {
    fn drop(&mut self) {
        for slot in &mut self.slots[..self.len] {
            // SAFETY: initialised, dropped once here. Scalars own nothing: skip the drop call.
            unsafe {
                if !matches!(
                    slot.assume_init_ref(),
                    Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::Null
                ) {
                    slot.assume_init_drop();
                }
            }
        }
    }
}

/// A callback argument as a Value; scalars without a call into the runtime.
#[inline(always)]
pub(crate) unsafe fn arg_value(v: TVMValue, code: c_int) -> Result<Value> {
    match code {
        crate::value::INT => Ok(Value::Int(v.v_int64)),
        crate::value::FLOAT => Ok(Value::Float(v.v_float64)),
        crate::value::BOOL => Ok(Value::Bool(v.v_int64 != 0)),
        crate::value::NULL => Ok(Value::Null),
        _ => Value::from_raw_borrowed(v, code),
    }
}

/// Converts the arguments (on the stack for up to 4, on the heap beyond), calls `f`, and sets
/// its result as the return value.
#[inline(always)]
unsafe fn call_closure<F>(
    f: &F,
    args: *const TVMValue,
    codes: *const c_int,
    n: usize,
    ret: ReturnSlot,
) -> Result<()>
where
    F: Fn(&[Value]) -> Result<Value>,
{
    const N: usize = 4;
    if n <= N {
        // Scalars only (the common case): plain copies that own nothing, so no conversion can
        // fail and nothing needs dropping afterwards.
        let mut slots: [MaybeUninit<Value>; N] = [const { MaybeUninit::uninit() }; N];
        let mut all_scalar = true;
        for (i, slot) in slots.iter_mut().enumerate().take(n) {
            let v = *args.add(i);
            slot.write(match *codes.add(i) {
                crate::value::INT => Value::Int(v.v_int64),
                crate::value::FLOAT => Value::Float(v.v_float64),
                crate::value::BOOL => Value::Bool(v.v_int64 != 0),
                crate::value::NULL => Value::Null,
                _ => {
                    all_scalar = false;
                    break;
                }
            });
        }
        if all_scalar {
            // SAFETY: the first n slots hold scalars.
            let values = std::slice::from_raw_parts(slots.as_ptr() as *const Value, n);
            return set_return(ret, f(values)?);
        }
    }
    let result = if n <= N {
        let mut slots: [MaybeUninit<Value>; N] = [const { MaybeUninit::uninit() }; N];
        let mut init = Initialised {
            slots: &mut slots,
            len: 0,
        };
        for i in 0..n {
            let v = arg_value(*args.add(i), *codes.add(i))?;
            init.slots[i].write(v);
            init.len = i + 1;
        }
        f(init.as_slice())?
    } else {
        let mut heap = Vec::with_capacity(n);
        for i in 0..n {
            heap.push(arg_value(*args.add(i), *codes.add(i))?);
        }
        f(&heap)?
    };
    set_return(ret, result)
}

fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

/// Reports `e` as the thread's last error; the callback then returns -1.
pub(crate) fn set_last_error(e: &Error) {
    let text = e.to_abi_text().replace('\0', "\\0");
    let c = CString::new(text).unwrap_or_default();
    // SAFETY: NUL-terminated text, copied by the runtime.
    unsafe { sys::TVMAPISetLastError(c.as_ptr()) };
}

/// Writes `value` into the caller's slot, handing over what it owns.
#[inline(always)]
pub(crate) unsafe fn set_return(ret: ReturnSlot, value: Value) -> Result<()> {
    // Scalars own nothing: matching by reference skips the enum's drop glue for them.
    let value = std::mem::ManuallyDrop::new(value);
    match &*value {
        Value::Int(x) => ret.write(TVMValue { v_int64: *x }, crate::value::INT),
        Value::Float(x) => ret.write(TVMValue { v_float64: *x }, crate::value::FLOAT),
        Value::Bool(x) => ret.write(TVMValue { v_int64: *x as i64 }, crate::value::BOOL),
        Value::Null => {}
        _ => return set_return_slow(ret, std::mem::ManuallyDrop::into_inner(value)),
    }
    Ok(())
}

#[inline(never)]
unsafe fn set_return_slow(ret: ReturnSlot, value: Value) -> Result<()> {
    let handle = |h: *mut c_void, code: c_int| ret.write(TVMValue { v_handle: h }, code);
    match value {
        Value::Str(s) if s.as_bytes().contains(&0) => {
            // A C string would end at the NUL: the text travels as a runtime.String object.
            let obj: crate::Object =
                crate::value::core_global!("runtime.String")?.invoke((s.as_bytes(),))?;
            handle(obj.into_raw(), crate::value::OBJECT);
        }
        Value::Str(s) => return return_string(ret, s.as_bytes(), false),
        Value::Bytes(b) => return return_string(ret, &b, true),
        Value::NDArray(a) => {
            if !a.is_owned() {
                // Its descriptor dies with this callback: the caller would get a dangling view.
                return Err(Error::value_error(
                    "polyffi: a borrowed NDArray view cannot be returned from a callback",
                ));
            }
            // Owned: its one reference goes to the caller (an owned NDArray holds nothing
            // else to release).
            let h = a.as_raw();
            std::mem::forget(a);
            handle(h as *mut c_void, crate::value::NDARRAY);
        }
        Value::Function(f) => handle(f.into_raw(), crate::value::FUNC),
        Value::Module(m) => {
            let h = m.as_raw();
            std::mem::forget(m);
            handle(h, crate::value::MODULE);
        }
        Value::Array(a) => handle(a.as_object().clone().into_raw(), crate::value::OBJECT),
        Value::Map(m) => handle(m.as_object().clone().into_raw(), crate::value::OBJECT),
        Value::Object(o) => handle(o.into_raw(), crate::value::OBJECT),
        Value::Shape(s) => handle(s.to_object()?.into_raw(), crate::value::OBJECT),
        plain => {
            // Device, DataType, OpaqueHandle and the scalars: no holder, nothing owned.
            if let Some((v, code)) = plain.raw_plain() {
                ret.write(v, code);
            }
        }
    }
    Ok(())
}

/// A string or bytes result, copied by the runtime into the thread's return storage.
#[inline]
unsafe fn return_string(ret: ReturnSlot, data: &[u8], is_bytes: bool) -> Result<()> {
    check_call(sys::TVMDirectReturnString(
        data.as_ptr() as *const _,
        data.len(),
        c_int::from(is_bytes),
        ret.value,
        ret.code,
    ))
}

unsafe extern "C" fn trampoline<F: PackedCall>(
    resource: *mut c_void,
    args: *const TVMValue,
    codes: *const c_int,
    num_args: c_int,
    ret_val: *mut TVMValue,
    ret_code: *mut c_int,
) -> c_int {
    let ret = ReturnSlot {
        value: ret_val,
        code: ret_code,
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<()> {
        // SAFETY: resource is the Box<F> made in make_function, alive until the finalizer.
        let f = &*(resource as *const F);
        f.call_packed(args, codes, usize::try_from(num_args).unwrap_or(0), ret)
    }));
    let err = match outcome {
        Ok(Ok(())) => return 0,
        Ok(Err(e)) => e,
        Err(payload) => Error::new("RustPanic", panic_text(payload.as_ref())),
    };
    // Reporting must not unwind either (the error text is plain data; be defensive anyway).
    let _ = catch_unwind(AssertUnwindSafe(|| set_last_error(&err)));
    -1
}

unsafe extern "C" fn finalizer<F>(resource: *mut c_void) {
    // SAFETY: the runtime calls this exactly once with the pointer from make_function.
    let boxed = Box::from_raw(resource as *mut F);
    // A panic in the closure's Drop must not unwind into C; it is dropped on the floor.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(boxed)));
}

// ---- Typed closures ---------------------------------------------------------------------------

/// A typed closure argument, converted from the borrowed packed value (scalars directly).
pub trait FromArg: Sized {
    /// # Safety
    /// `v`/`code` must be a borrowed callback argument.
    unsafe fn from_arg(v: TVMValue, code: c_int, index: usize) -> Result<Self>;
}

#[cold]
#[inline(never)]
fn arg_count_error(expected: usize, got: usize) -> Error {
    Error::new(
        "TypeError",
        format!("expected {expected} arguments but got {got}"),
    )
}

#[cold]
#[inline(never)]
fn arg_mismatch(index: usize, want: &str, code: c_int) -> Error {
    Error::new(
        "TypeError",
        format!(
            "argument {index} expected {want} but got {}",
            crate::value::type_code_name(code)
        ),
    )
}

impl FromArg for i64 {
    #[inline(always)]
    unsafe fn from_arg(v: TVMValue, code: c_int, index: usize) -> Result<Self> {
        match code {
            crate::value::INT | crate::value::UINT => Ok(v.v_int64),
            _ => Err(arg_mismatch(index, "int", code)),
        }
    }
}

impl FromArg for f64 {
    #[inline(always)]
    unsafe fn from_arg(v: TVMValue, code: c_int, index: usize) -> Result<Self> {
        match code {
            crate::value::FLOAT => Ok(v.v_float64),
            crate::value::INT | crate::value::UINT | crate::value::BOOL => Ok(v.v_int64 as f64),
            _ => Err(arg_mismatch(index, "float", code)),
        }
    }
}

impl FromArg for bool {
    #[inline(always)]
    unsafe fn from_arg(v: TVMValue, code: c_int, index: usize) -> Result<Self> {
        match code {
            crate::value::BOOL | crate::value::INT | crate::value::UINT => Ok(v.v_int64 != 0),
            _ => Err(arg_mismatch(index, "bool", code)),
        }
    }
}

macro_rules! from_arg_via_value {
    ($($t:ty),*) => {$(
        impl FromArg for $t {
            unsafe fn from_arg(v: TVMValue, code: c_int, index: usize) -> Result<Self> {
                <$t>::try_from(arg_value(v, code)?).map_err(|e| {
                    Error::new(e.kind(), format!("argument {index}: {}", e.message()))
                })
            }
        }
    )*};
}

from_arg_via_value!(
    String,
    Vec<u8>,
    Function,
    crate::NDArray,
    crate::Module,
    crate::Array,
    crate::Map,
    crate::Device
);

impl FromArg for Value {
    unsafe fn from_arg(v: TVMValue, code: c_int, _index: usize) -> Result<Self> {
        arg_value(v, code)
    }
}

/// Rust functions of 0 to 4 typed arguments returning `Result<R>` with `R: Into<Value>`.
pub trait TypedFn<Args>: Send + Sync + 'static {
    /// # Safety
    /// As [`PackedCall::call_packed`].
    unsafe fn call_typed(
        &self,
        args: *const TVMValue,
        codes: *const c_int,
        n: usize,
        ret: ReturnSlot,
    ) -> Result<()>;
}

macro_rules! typed_fn {
    ($n:literal; $($A:ident $i:tt),*) => {
        impl<Func, R, $($A),*> TypedFn<($($A,)*)> for Func
        where
            Func: Fn($($A),*) -> Result<R> + Send + Sync + 'static,
            R: Into<Value>,
            $($A: FromArg,)*
        {
            #[inline(always)]
            #[allow(unused_variables)]
            unsafe fn call_typed(
                &self,
                args: *const TVMValue,
                codes: *const c_int,
                n: usize,
                ret: ReturnSlot,
            ) -> Result<()> {
                if n != $n {
                    return Err(arg_count_error($n, n));
                }
                let r = self($($A::from_arg(*args.add($i), *codes.add($i), $i)?),*)?;
                set_return(ret, r.into())
            }
        }
    };
}

typed_fn!(0;);
typed_fn!(1; A 0);
typed_fn!(2; A 0, B 1);
typed_fn!(3; A 0, B 1, C 2);
typed_fn!(4; A 0, B 1, C 2, D 3);

/// A typed closure as a [`PackedCall`].
pub(crate) struct Typed<F, Args>(pub F, pub std::marker::PhantomData<fn(Args)>);

impl<F, Args> PackedCall for Typed<F, Args>
where
    F: TypedFn<Args>,
    Args: 'static,
{
    #[inline(always)]
    unsafe fn call_packed(
        &self,
        args: *const TVMValue,
        codes: *const c_int,
        n: usize,
        ret: ReturnSlot,
    ) -> Result<()> {
        self.0.call_typed(args, codes, n, ret)
    }
}
