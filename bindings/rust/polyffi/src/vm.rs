//! [`VirtualMachine`]: a relax VM executable (what TVM 0.2x's `export_library` writes), run by
//! function name, built on the executable module's own protocol as `tvm.relax.VirtualMachine`
//! does it:
//!
//! ```no_run
//! use polyffi::{Device, Module, VirtualMachine};
//!
//! fn main() -> polyffi::Result<()> {
//!     let lib = Module::load("model.so")?;                  // relax.build(...).export_library
//!     let vm = VirtualMachine::new(&lib, Device::cpu(0))?;   // vm_load_executable + vm_initialization
//!     let x = ndarray::Array2::<f32>::zeros((1, 16));
//!     let y = vm.invoke("forward", &[&x])?.into_tensor()?;   // or vm.function("forward")?.call(..)
//!     println!("{:?}", y.as_slice::<f32>()?);
//!     Ok(())
//! }
//! ```
//!
//! Arguments ([`VmArg`]): [`NDArray`]s, `ndarray` arrays and views, `(&[T], &[i64])` (a slice
//! with its shape), [`Value`]s and scalars. Host memory passes zero-copy when it is compact and
//! 64-byte aligned; anything else is copied into a new aligned array first: the kernels TVM
//! compiles assume 64-byte-aligned buffers without checking. Results are [`Output`]s: a tensor,
//! or a tuple of outputs for a relax Tuple. A result holds its own storage, so it stays valid
//! after the next call.
use std::collections::HashMap;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Mutex;

use polyffi_sys as sys;
use sys::TVMValue;

use crate::errors::{Error, Result};
use crate::function::Function;
use crate::ndarray::{Element, NDArray};
use crate::registry::Module;
use crate::value::{ToArg, Value, ValueHolder};
use crate::Device;

/// The alignment TVM's compiled kernels assume of every tensor's data.
pub const KERNEL_ALIGNMENT: usize = 64;

/// The VM's storage allocator, as `vm_initialization` numbers them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Allocator {
    /// One aligned allocation per tensor (TVM's `1`).
    Naive,
    /// Freed buffers kept and reused by size (TVM's `2`, its default).
    #[default]
    Pooled,
}

impl Allocator {
    fn code(self) -> i64 {
        match self {
            Allocator::Naive => 1,
            Allocator::Pooled => 2,
        }
    }
}

/// The result of a VM function: a tensor, a tuple (a relax Tuple, the runtime's Array), or any
/// other value (a shape, a scalar, None).
#[derive(Clone, Debug)]
pub enum Output {
    Tensor(NDArray),
    Tuple(Vec<Output>),
    Other(Value),
}

impl Output {
    fn from_value(v: Value) -> Result<Output> {
        Ok(match v {
            Value::NDArray(a) => Output::Tensor(a),
            Value::Array(a) => Output::Tuple(
                a.to_vec()?
                    .into_iter()
                    .map(Output::from_value)
                    .collect::<Result<_>>()?,
            ),
            other => Output::Other(other),
        })
    }

    fn describe(&self) -> String {
        match self {
            Output::Tensor(_) => "a tensor".into(),
            Output::Tuple(items) => format!("a tuple of {}", items.len()),
            Output::Other(v) => format!("a {}", v.type_name()),
        }
    }

    /// The tensor; TypeError for a tuple or another value.
    pub fn into_tensor(self) -> Result<NDArray> {
        match self {
            Output::Tensor(a) => Ok(a),
            other => Err(Error::type_error(format!(
                "VirtualMachine: expected a tensor result but got {}",
                other.describe()
            ))),
        }
    }

    /// The elements of a tuple result; TypeError for anything else.
    pub fn into_tuple(self) -> Result<Vec<Output>> {
        match self {
            Output::Tuple(items) => Ok(items),
            other => Err(Error::type_error(format!(
                "VirtualMachine: expected a tuple result but got {}",
                other.describe()
            ))),
        }
    }

    /// A tuple of tensors as a `Vec`, a single tensor as a `Vec` of one; TypeError when an
    /// element is not a tensor (a nested tuple: use [`into_tuple`](Self::into_tuple)).
    pub fn into_tensors(self) -> Result<Vec<NDArray>> {
        match self {
            Output::Tuple(items) => items.into_iter().map(Output::into_tensor).collect(),
            other => Ok(vec![other.into_tensor()?]),
        }
    }

    pub fn as_tensor(&self) -> Option<&NDArray> {
        match self {
            Output::Tensor(a) => Some(a),
            _ => None,
        }
    }

    pub fn is_tuple(&self) -> bool {
        matches!(self, Output::Tuple(_))
    }
}

impl TryFrom<Output> for NDArray {
    type Error = Error;
    fn try_from(o: Output) -> Result<NDArray> {
        o.into_tensor()
    }
}

/// An argument prepared for one call: borrowed from the caller, or a copy made for the call.
pub struct Staged<'a>(StagedKind<'a>);

enum StagedKind<'a> {
    /// The caller's array, passed as it is.
    Array(&'a NDArray),
    /// A new array (an aligned copy) or a borrowed view of the caller's aligned memory; either
    /// way it lives until the call returns.
    Temp(NDArray),
    /// A value passed as it is (with its string / bytes holder).
    Value(&'a Value, ValueHolder),
    /// A scalar.
    Scalar(Value),
}

impl Staged<'_> {
    fn raw(&self) -> (TVMValue, c_int) {
        match &self.0 {
            StagedKind::Array(a) => a.raw(&()),
            StagedKind::Temp(a) => a.raw(&()),
            StagedKind::Value(v, h) => v.raw(h),
            StagedKind::Scalar(v) => v.raw(&ValueHolder::None),
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// What a VM function accepts as an argument (see the [module docs](self)).
pub trait VmArg: sealed::Sealed {
    /// Prepares the argument for a call: zero-copy when the memory is compact and 64-byte
    /// aligned, otherwise an aligned copy.
    fn stage(&self) -> Result<Staged<'_>>;
}

fn is_aligned(p: *const c_void) -> bool {
    (p as usize) % KERNEL_ALIGNMENT == 0
}

/// An aligned, compact copy of `a` on its own device.
fn aligned_copy(a: &NDArray) -> Result<NDArray> {
    let mut out = NDArray::empty(a.shape(), a.dtype(), a.device())?;
    if a.is_contiguous() && matches!(a.device().device_type, 1 | 3) {
        // SAFETY: a compact CPU array's size_bytes() bytes start at data_ptr().
        let bytes =
            unsafe { std::slice::from_raw_parts(a.data_ptr() as *const u8, a.size_bytes()) };
        out.copy_from_bytes(bytes)?;
    } else {
        out.copy_from(a)?;
    }
    Ok(out)
}

fn stage_array(a: &NDArray) -> Result<Staged<'_>> {
    let host = matches!(a.device().device_type, 1 | 3);
    if host && (!is_aligned(a.data_ptr()) || !a.is_contiguous()) {
        return Ok(Staged(StagedKind::Temp(aligned_copy(a)?)));
    }
    Ok(Staged(StagedKind::Array(a)))
}

/// A borrowed view of compact host memory (the descriptor is copied by `from_borrowed`).
///
/// # Safety
/// `data` must stay valid, holding the array's bytes, for as long as the view is used.
unsafe fn host_view(data: *const c_void, shape: &[i64], dtype: crate::DataType) -> NDArray {
    let mut shape = shape.to_vec();
    let tensor = sys::DLTensor {
        data: data as *mut c_void,
        device: Device::cpu(0).to_raw(),
        ndim: shape.len() as c_int,
        dtype: dtype.to_raw(),
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    // from_borrowed copies the descriptor (shape included) before `tensor` and `shape` go.
    NDArray::from_borrowed(std::ptr::NonNull::from(&tensor))
}

impl sealed::Sealed for NDArray {}
impl VmArg for NDArray {
    fn stage(&self) -> Result<Staged<'_>> {
        stage_array(self)
    }
}

impl sealed::Sealed for Value {}
impl VmArg for Value {
    fn stage(&self) -> Result<Staged<'_>> {
        match self {
            Value::NDArray(a) => stage_array(a),
            other => Ok(Staged(StagedKind::Value(other, other.prepare()?))),
        }
    }
}

impl<T: VmArg + ?Sized> sealed::Sealed for &T {}
impl<T: VmArg + ?Sized> VmArg for &T {
    fn stage(&self) -> Result<Staged<'_>> {
        (**self).stage()
    }
}

macro_rules! scalar_vm_arg {
    ($($t:ty => $variant:ident as $as:ty),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl VmArg for $t {
            fn stage(&self) -> Result<Staged<'_>> {
                Ok(Staged(StagedKind::Scalar(Value::$variant(*self as $as))))
            }
        }
    )*};
}

scalar_vm_arg! {
    i64 => Int as i64, i32 => Int as i64, usize => Int as i64,
    f64 => Float as f64, f32 => Float as f64, bool => Bool as bool,
}

/// A slice with its shape (row-major): zero-copy when the slice is 64-byte aligned.
impl<T: Element> sealed::Sealed for (&[T], &[i64]) {}
impl<T: Element> VmArg for (&[T], &[i64]) {
    fn stage(&self) -> Result<Staged<'_>> {
        let (data, shape) = *self;
        let count = shape.iter().try_fold(
            1i64,
            |acc, &d| {
                if d < 0 {
                    None
                } else {
                    acc.checked_mul(d)
                }
            },
        );
        if count != Some(data.len() as i64) {
            return Err(Error::value_error(format!(
                "VirtualMachine: shape {shape:?} needs {} elements but the slice holds {}",
                count.map_or_else(|| "a bad number of".to_string(), |c| c.to_string()),
                data.len()
            )));
        }
        if is_aligned(data.as_ptr() as *const c_void) {
            // SAFETY: the view is dropped when the call returns, while `data` is borrowed.
            let view = unsafe { host_view(data.as_ptr() as *const c_void, shape, T::DTYPE) };
            Ok(Staged(StagedKind::Temp(view)))
        } else {
            Ok(Staged(StagedKind::Temp(NDArray::from_slice(data, shape)?)))
        }
    }
}

#[cfg(feature = "ndarray")]
mod with_ndarray {
    use super::*;
    use ndarray::{ArrayBase, Dimension};

    /// `ndarray` arrays and views: zero-copy when in standard layout and 64-byte aligned.
    impl<S, D> sealed::Sealed for ArrayBase<S, D>
    where
        S: ndarray::Data,
        S::Elem: Element,
        D: Dimension,
    {
    }
    impl<S, D> VmArg for ArrayBase<S, D>
    where
        S: ndarray::Data,
        S::Elem: Element,
        D: Dimension,
    {
        fn stage(&self) -> Result<Staged<'_>> {
            if self.is_standard_layout() && is_aligned(self.as_ptr() as *const c_void) {
                let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
                // SAFETY: the view is dropped when the call returns, while `self` is borrowed.
                let view = unsafe {
                    host_view(
                        self.as_ptr() as *const c_void,
                        &shape,
                        <S::Elem as Element>::DTYPE,
                    )
                };
                Ok(Staged(StagedKind::Temp(view)))
            } else {
                Ok(Staged(StagedKind::Temp(NDArray::from_ndarray(self)?)))
            }
        }
    }
}

fn call_staged(f: &Function, args: &[&dyn VmArg]) -> Result<Value> {
    let staged = args.iter().map(|a| a.stage()).collect::<Result<Vec<_>>>()?;
    let (mut values, mut codes): (Vec<TVMValue>, Vec<c_int>) =
        staged.iter().map(Staged::raw).unzip();
    let out = f.call_raw(&mut values, &mut codes);
    drop(staged);
    out
}

/// One function of a [`VirtualMachine`] (`vm["forward"]`).
#[derive(Clone, Debug)]
pub struct VmFunction {
    name: String,
    function: Function,
}

impl VmFunction {
    /// Runs the function: arguments staged as [`VmArg`] describes, the result as an [`Output`].
    pub fn call(&self, args: &[&dyn VmArg]) -> Result<Output> {
        Output::from_value(call_staged(&self.function, args)?)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The VM module's own function (plain packed calls, no staging or conversion).
    pub fn function(&self) -> &Function {
        &self.function
    }
}

/// A relax VM over an executable: `lib["vm_load_executable"]()`, then `vm_initialization` as
/// TVM's `relax.VirtualMachine` calls it. `Send + Sync`: calls from several threads are
/// serialized by the VM (one runs at a time); for parallel inference make one VM per thread from
/// the same library.
#[derive(Debug)]
pub struct VirtualMachine {
    module: Module,
    device: Device,
    functions: Mutex<HashMap<String, VmFunction>>,
}

impl VirtualMachine {
    /// A VM for the executable `lib` (a library exported by TVM 0.2x's relax pipeline) on
    /// `device`, with the pooled allocator (TVM's default).
    pub fn new(lib: &Module, device: Device) -> Result<VirtualMachine> {
        VirtualMachine::with_allocator(lib, device, Allocator::Pooled)
    }

    /// As [`new`](Self::new) with the given allocator. For a device other than the CPU the CPU
    /// is added as the last device (shape computations run there), as TVM's wrapper does.
    pub fn with_allocator(
        lib: &Module,
        device: Device,
        allocator: Allocator,
    ) -> Result<VirtualMachine> {
        let load = lib
            .get_function("vm_load_executable", false)?
            .ok_or_else(|| {
                let key = lib.type_key().unwrap_or_else(|_| "?".into());
                let hint = if key.starts_with("GraphExecutor") || key.starts_with("GraphRuntime") {
                    "; a TVM 0.18 graph export goes to GraphModule::from_factory"
                } else {
                    ""
                };
                Error::type_error(format!(
                    "VirtualMachine::new: a {key} module is not a relax VM executable \
                 (it has no vm_load_executable){hint}"
                ))
            })?;
        let module: Module = load.invoke(())?;
        let init = module.function("vm_initialization").map_err(|_| {
            Error::type_error(
                "VirtualMachine::new: vm_load_executable() gave a module without \
                 vm_initialization",
            )
        })?;
        let alloc = allocator.code();
        let (dt, di) = (device.device_type as i64, device.device_id as i64);
        if device.device_type == 1 {
            init.invoke::<()>((dt, di, alloc))?;
        } else {
            init.invoke::<()>((dt, di, alloc, 1i64, 0i64, alloc))?;
        }
        Ok(VirtualMachine {
            module,
            device,
            functions: Mutex::new(HashMap::new()),
        })
    }

    /// The VM function `name` (looked up once); AttributeError naming it when the executable
    /// has none.
    pub fn function(&self, name: &str) -> Result<VmFunction> {
        if let Some(f) = self.cache().get(name) {
            return Ok(f.clone());
        }
        let function = self.module.get_function(name, false)?.ok_or_else(|| {
            Error::new(
                "AttributeError",
                format!("VirtualMachine: the executable has no function '{name}'"),
            )
        })?;
        let f = VmFunction {
            name: name.to_string(),
            function,
        };
        self.cache().insert(name.to_string(), f.clone());
        Ok(f)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, VmFunction>> {
        // The map stays consistent even if a holder panicked (inserts are single calls).
        self.functions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the executable has a function `name`.
    pub fn has_function(&self, name: &str) -> Result<bool> {
        Ok(self.cache().contains_key(name) || self.module.get_function(name, false)?.is_some())
    }

    /// Runs the VM function `name` on `args`: `vm.invoke("forward", &[&x, &w])`.
    pub fn invoke(&self, name: &str, args: &[&dyn VmArg]) -> Result<Output> {
        self.function(name)?.call(args)
    }

    fn builtin(&self, name: &str) -> Result<Function> {
        Ok(self.function(name)?.function)
    }

    /// Stores the inputs of `func_name` for [`invoke_stateful`](Self::invoke_stateful) (the VM
    /// copies them into its own storage).
    pub fn set_input(&self, func_name: &str, args: &[&dyn VmArg]) -> Result<()> {
        let name = Value::Str(func_name.to_string());
        let mut all: Vec<&dyn VmArg> = Vec::with_capacity(args.len() + 1);
        all.push(&name);
        all.extend_from_slice(args);
        call_staged(&self.builtin("set_input")?, &all).map(drop)
    }

    /// Runs `func_name` on the inputs given to [`set_input`](Self::set_input).
    pub fn invoke_stateful(&self, func_name: &str) -> Result<()> {
        self.builtin("invoke_stateful")?.invoke((func_name,))
    }

    /// The result of the last [`invoke_stateful`](Self::invoke_stateful) of `func_name`.
    pub fn get_outputs(&self, func_name: &str) -> Result<Output> {
        let arity = self.builtin("get_output_arity")?;
        let get = self.builtin("get_output")?;
        self.output_at(&arity, &get, func_name, &mut Vec::new())
    }

    fn output_at(
        &self,
        arity: &Function,
        get: &Function,
        func_name: &str,
        index: &mut Vec<i64>,
    ) -> Result<Output> {
        let mut args = vec![Value::Str(func_name.to_string())];
        args.extend(index.iter().map(|&i| Value::Int(i)));
        let n = i64::try_from(arity.call(&args)?)?;
        if n < 0 {
            return Output::from_value(get.call(&args)?);
        }
        let mut items = Vec::with_capacity(n as usize);
        for i in 0..n {
            index.push(i);
            items.push(self.output_at(arity, get, func_name, index)?);
            index.pop();
        }
        Ok(Output::Tuple(items))
    }

    /// The parameter names of `func_name`, in order.
    pub fn param_names(&self, func_name: &str) -> Result<Vec<String>> {
        let n: i64 = self.builtin("get_function_arity")?.invoke((func_name,))?;
        let get = self.builtin("get_function_param_name")?;
        (0..n)
            .map(|i| get.invoke::<String>((func_name, i)))
            .collect()
    }

    /// The VM module (`lib["vm_load_executable"]()`), for its other functions.
    pub fn module(&self) -> &Module {
        &self.module
    }

    pub fn device(&self) -> Device {
        self.device
    }
}

#[cfg(all(test, feature = "ndarray"))]
mod tests {
    use super::*;
    use crate::DataType;

    fn staged_ptr(s: &Staged<'_>) -> *mut c_void {
        match &s.0 {
            StagedKind::Array(a) => a.data_ptr(),
            StagedKind::Temp(a) => a.data_ptr(),
            _ => std::ptr::null_mut(),
        }
    }

    /// A slice of 16 floats starting `offset` bytes past a 64-byte boundary.
    fn floats_at(storage: &mut [f32], offset: usize) -> &mut [f32] {
        let skip = (64 - storage.as_ptr() as usize % 64) % 64 + offset;
        assert_eq!(skip % 4, 0);
        let s = &mut storage[skip / 4..skip / 4 + 16];
        for (i, x) in s.iter_mut().enumerate() {
            *x = i as f32;
        }
        s
    }

    #[test]
    fn aligned_host_memory_passes_zero_copy_and_the_rest_is_copied_aligned() {
        let mut storage = vec![0f32; 64];
        let shape = [2i64, 8];
        for offset in [0usize, 4, 16, 32] {
            let data: &[f32] = floats_at(&mut storage, offset);
            let ptr = data.as_ptr() as *mut c_void;
            let slice_arg = (data, &shape[..]);
            let view_arg = ndarray::ArrayView2::from_shape((2, 8), data).unwrap();
            let views: [Staged<'_>; 2] = [slice_arg.stage().unwrap(), view_arg.stage().unwrap()];
            for staged in &views {
                let p = staged_ptr(staged);
                assert_eq!(
                    p == ptr,
                    offset == 0,
                    "offset {offset}: zero-copy iff aligned"
                );
                assert!(
                    is_aligned(p),
                    "offset {offset}: what reaches the VM is aligned"
                );
                let (v, code) = staged.raw();
                // SAFETY: a staged tensor argument is a live DLTensor*.
                let t = unsafe { &*(v.v_handle as *const sys::DLTensor) };
                assert_eq!(unsafe { std::slice::from_raw_parts(t.shape, 2) }, &shape);
                let copy = unsafe { std::slice::from_raw_parts(t.data as *const f32, 16) };
                assert_eq!(copy, data, "offset {offset}: same values");
                assert!(code == crate::value::DLTENSOR || code == crate::value::NDARRAY);
            }
        }
        // A runtime array (aligned) passes as itself; a misaligned borrowed view is copied.
        let a = NDArray::from_slice(&[1f32; 16], &[16]).unwrap();
        assert_eq!(staged_ptr(&a.stage().unwrap()), a.data_ptr());
        let data: &[f32] = floats_at(&mut storage, 4);
        // SAFETY: `data` outlives the view.
        let view = unsafe { host_view(data.as_ptr() as *const c_void, &[16], DataType::FLOAT32) };
        let staged = view.stage().unwrap();
        assert_ne!(staged_ptr(&staged), view.data_ptr());
        assert!(is_aligned(staged_ptr(&staged)));
        // Scalars and other values pass as they are.
        assert_eq!(2.5f64.stage().unwrap().raw().1, crate::value::FLOAT);
    }
}
