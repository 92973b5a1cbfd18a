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
//! Calls run on the core's model runner (`polyffi.runner.vm`), which owns the VM protocol, stages
//! every argument TVM's kernels could not take as it is (host memory the caller lends, and
//! misaligned or strided arrays, are copied into compact 64-byte-aligned arrays) and runs each
//! call on a VM of its own pool. So [`VirtualMachine::invoke`] takes `&self`, and one
//! `VirtualMachine` (`Send + Sync`) serves many threads at once, sharing the model's weights.
//!
//! Arguments ([`VmArg`]): what a [`Function`] call takes ([`ToArg`]: [`NDArray`]s, `ndarray`
//! arrays and views, [`Value`]s, scalars, strings), and `(&[T], &[i64])` (a slice with its
//! shape). Results are [`Output`]s: a tensor, or a tuple of
//! outputs for a relax Tuple. A result holds its own storage, so it stays valid after the next
//! call.
use std::collections::HashSet;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Mutex;

use polyffi_sys as sys;
use sys::TVMValue;

use crate::{Array, Device, Element, Error, Function, Module, NDArray, Result, ToArg, Value};

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
    fn name(self) -> &'static str {
        match self {
            Allocator::Naive => "naive",
            Allocator::Pooled => "pooled",
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
    pub(crate) fn from_value(v: Value) -> Result<Output> {
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

/// An argument prepared for one call: its packed value, and the holder that value may point
/// into (boxed, so it stays put), kept until the call returns.
pub struct Staged<'a>(TVMValue, c_int, #[allow(dead_code)] Box<dyn Keep + 'a>);

/// Anything kept alive for a call.
trait Keep {}
impl<T: ?Sized> Keep for T {}

mod sealed {
    pub trait Sealed {}
}

/// What a VM function accepts as an argument (see the [module docs](self)).
pub trait VmArg: sealed::Sealed {
    /// Prepares the argument for a call (host memory is lent as a view; the core copies what
    /// the kernels cannot take as it is).
    fn stage(&self) -> Result<Staged<'_>>;
}

/// Everything a [`Function`] call takes ([`ToArg`]), passed as that call passes it.
impl<T: ToArg + ?Sized> sealed::Sealed for T {}
impl<T: ToArg + ?Sized> VmArg for T {
    fn stage(&self) -> Result<Staged<'_>> {
        let holder = Box::new(self.prepare()?);
        let (v, c) = self.raw(&holder);
        Ok(Staged(v, c, holder))
    }
}

/// A slice with its shape (row-major), lent as a view of the caller's memory.
impl<T: Element> sealed::Sealed for (&[T], &[i64]) {}
impl<T: Element> VmArg for (&[T], &[i64]) {
    fn stage(&self) -> Result<Staged<'_>> {
        let (data, shape) = *self;
        let count = shape.iter().try_fold(1i64, |acc, &d| {
            (d >= 0).then(|| acc.checked_mul(d)).flatten()
        });
        if count != Some(data.len() as i64) {
            return Err(Error::value_error(format!(
                "VirtualMachine: shape {shape:?} needs {} elements but the slice holds {}",
                count.map_or_else(|| "a bad number of".to_string(), |c| c.to_string()),
                data.len()
            )));
        }
        let mut shape = shape.to_vec();
        let tensor = sys::DLTensor {
            data: data.as_ptr() as *mut c_void,
            device: Device::cpu(0).to_raw(),
            ndim: shape.len() as c_int,
            dtype: T::DTYPE.to_raw(),
            shape: shape.as_mut_ptr(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        };
        // SAFETY: from_borrowed copies the descriptor (shape included); the view is dropped
        // when the call returns, while `data` is still borrowed.
        let view = unsafe { NDArray::from_borrowed(std::ptr::NonNull::from(&tensor)) };
        let (v, c) = view.raw(&());
        Ok(Staged(v, c, Box::new(view)))
    }
}

/// `f(head..., args...)`: args staged as [`VmArg`] describes.
pub(crate) fn call_staged(f: &Function, head: &[&dyn VmArg], args: &[&dyn VmArg]) -> Result<Value> {
    let staged = head
        .iter()
        .chain(args)
        .map(|a| a.stage())
        .collect::<Result<Vec<_>>>()?;
    let (mut values, mut codes): (Vec<TVMValue>, Vec<c_int>) =
        staged.iter().map(|s| (s.0, s.1)).unzip();
    f.call_raw(&mut values, &mut codes)
}

/// One function of a [`VirtualMachine`] (`vm["forward"]`): a call runs on the runner's pool.
#[derive(Clone, Debug)]
pub struct VmFunction {
    name: String,
    run: Function,
}

impl VmFunction {
    /// Runs the function (thread-safe): arguments as [`VmArg`] describes, the result as an
    /// [`Output`].
    pub fn call(&self, args: &[&dyn VmArg]) -> Result<Output> {
        Output::from_value(call_staged(&self.run, &[&self.name], args)?)
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A relax VM over an executable, run by the core's model runner (`polyffi.runner.vm`), which
/// does `vm_load_executable` + `vm_initialization` as TVM's `relax.VirtualMachine` does. `Send +
/// Sync`, and [`invoke`](Self::invoke) takes `&self`: calls from many threads run at once, each
/// on a VM of the runner's pool (sharing the executable's weights), without a lock. The stateful
/// API (`set_input` / `invoke_stateful`) uses the runner's own VM, one caller at a time.
#[derive(Debug)]
pub struct VirtualMachine {
    runner: Module,
    run: Function,
    module: Module,
    device: Device,
    known: Mutex<HashSet<String>>,
}

impl VirtualMachine {
    /// A VM for the executable `lib` (a library exported by TVM 0.2x's relax pipeline) on
    /// `device`, with the pooled allocator (TVM's default).
    pub fn new(lib: &Module, device: Device) -> Result<VirtualMachine> {
        VirtualMachine::with_allocator(lib, device, Allocator::Pooled)
    }

    /// As [`new`](Self::new) with the given allocator.
    pub fn with_allocator(
        lib: &Module,
        device: Device,
        allocator: Allocator,
    ) -> Result<VirtualMachine> {
        // The runner refuses a library that is not a relax VM executable (TypeError).
        let runner: Module = Function::global("polyffi.runner.vm")?.invoke((
            lib,
            device.device_type as i64,
            device.device_id as i64,
            allocator.name(),
        ))?;
        Ok(VirtualMachine {
            run: runner.function("run")?,
            module: runner.function("vm")?.invoke(())?,
            runner,
            device,
            known: Mutex::new(HashSet::new()),
        })
    }

    /// The VM function `name` (checked once); AttributeError naming it when the executable
    /// has none.
    pub fn function(&self, name: &str) -> Result<VmFunction> {
        if !self.has_function(name)? {
            return Err(Error::new(
                "AttributeError",
                format!("VirtualMachine: the executable has no function '{name}'"),
            ));
        }
        Ok(VmFunction {
            name: name.to_string(),
            run: self.run.clone(),
        })
    }

    /// Whether the executable has a function `name`.
    pub fn has_function(&self, name: &str) -> Result<bool> {
        // The set stays consistent even if a holder panicked (inserts are single calls).
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if known.contains(name) {
            return Ok(true);
        }
        let found = self.module.get_function(name, false)?.is_some();
        if found {
            known.insert(name.to_string());
        }
        Ok(found)
    }

    /// Runs the VM function `name` on `args`: `vm.invoke("forward", &[&x, &w])`.
    pub fn invoke(&self, name: &str, args: &[&dyn VmArg]) -> Result<Output> {
        self.function(name)?.call(args)
    }

    /// [`invoke`](Self::invoke) on the core's worker pool, on owned arrays (retained until the
    /// call ends, so the future borrows nothing: `Send + 'static`). A missing function or a full
    /// queue (`QueueFullError`) is an `Err` here, at submit.
    pub fn invoke_async(
        &self,
        name: &str,
        args: &[NDArray],
    ) -> Result<impl std::future::Future<Output = Result<Output>> + Send + 'static> {
        let f = self.function(name)?;
        let mut all = Vec::with_capacity(args.len() + 1);
        all.push(Value::Str(f.name));
        all.extend(args.iter().cloned().map(Value::NDArray));
        let call = f.run.call_async(&all)?;
        Ok(async move { Output::from_value(call.await?) })
    }

    /// Stores the inputs of `func_name` for [`invoke_stateful`](Self::invoke_stateful) (the
    /// runner's own VM copies them into its own storage).
    pub fn set_input(&self, func_name: &str, args: &[&dyn VmArg]) -> Result<()> {
        call_staged(&self.runner.function("set_input")?, &[&func_name], args).map(drop)
    }

    /// Runs `func_name` on the inputs given to [`set_input`](Self::set_input).
    pub fn invoke_stateful(&self, func_name: &str) -> Result<()> {
        self.runner
            .function("invoke_stateful")?
            .invoke((func_name,))
    }

    /// The result of the last [`invoke_stateful`](Self::invoke_stateful) of `func_name`.
    pub fn get_outputs(&self, func_name: &str) -> Result<Output> {
        Output::from_value(self.runner.function("get_outputs")?.invoke((func_name,))?)
    }

    /// The parameter names of `func_name`, in order.
    pub fn param_names(&self, func_name: &str) -> Result<Vec<String>> {
        let names: Array = self.runner.function("param_names")?.invoke((func_name,))?;
        names.to_vec()?.into_iter().map(String::try_from).collect()
    }

    /// The runner's own VM module (`lib["vm_load_executable"]()`), for its other functions.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The core's model runner (`polyffi.runner.vm`): `run`, `pool_size`, ...
    pub fn runner(&self) -> &Module {
        &self.runner
    }

    pub fn device(&self) -> Device {
        self.device
    }
}
