//! [`GraphModule`]: the graph executor (`tvm.graph_executor.create`) with typed methods. The
//! executor's functions are looked up once; host arrays (`ndarray` views) pass zero-copy.
use crate::errors::{Error, Result};
use crate::function::Function;
use crate::ndarray::NDArray;
use crate::registry::Module;
use crate::value::{ToArg, Value};
use crate::Device;

/// A graph-executor module, as `tvm.graph_executor.create(graph_json, lib, dev_type, dev_id)`
/// or a TVM factory module's `default(device)` returns it.
#[derive(Clone, Debug)]
pub struct GraphModule {
    module: Module,
    set_input: Function,
    run: Function,
    get_output: Function,
    get_num_outputs: Function,
    get_input_index: Function,
    load_params: Function,
}

/// An input named or numbered: `&str` or an index.
pub trait InputKey: ToArg {}
impl InputKey for &str {}
impl InputKey for String {}
impl InputKey for &String {}
impl InputKey for usize {}
impl InputKey for i64 {}
impl InputKey for i32 {}

impl GraphModule {
    /// Wraps an executor module. A `GraphExecutorFactory` (what loading a library exported by
    /// TVM's `export_library` gives) is not an executor: that is a TypeError telling to call
    /// its `default(device)` first, which [`from_factory`](Self::from_factory) does.
    pub fn new(module: Module) -> Result<GraphModule> {
        if module.get_function("run", true)?.is_none()
            && module.get_function("default", true)?.is_some()
        {
            return Err(Error::type_error(format!(
                "GraphModule::new: a {} module is a factory, not a graph executor; pass its \
                 default(device) (or use GraphModule::from_factory(&lib, device))",
                module.type_key()?
            )));
        }
        Ok(GraphModule {
            set_input: module.function("set_input")?,
            run: module.function("run")?,
            get_output: module.function("get_output")?,
            get_num_outputs: module.function("get_num_outputs")?,
            get_input_index: module.function("get_input_index")?,
            load_params: module.function("load_params")?,
            module,
        })
    }

    /// The executor of a library exported by TVM (`lib.export_library`), loaded as its
    /// `GraphExecutorFactory`: `lib["default"](device)`, with the factory's params already set.
    pub fn from_factory(lib: &Module, device: Device) -> Result<GraphModule> {
        let default = lib.get_function("default", true)?.ok_or_else(|| {
            Error::type_error(format!(
                "GraphModule::from_factory: the {} module has no default(device) function \
                 (not a library exported by TVM's export_library; for a graph JSON and a \
                 kernels library use GraphModule::create)",
                lib.type_key().unwrap_or_else(|_| "?".into())
            ))
        })?;
        GraphModule::new(default.invoke::<Module>((device,))?)
    }

    /// Builds an executor from a graph JSON and the model library that holds its kernels.
    pub fn create(graph_json: &str, lib: &Module, device: Device) -> Result<GraphModule> {
        let create = Function::global("tvm.graph_executor.create")?;
        let module: Module =
            create.invoke((graph_json, lib, device.device_type, device.device_id))?;
        GraphModule::new(module)
    }

    /// Sets input `key` (a name or an index) from an NDArray or an `ndarray` view (copied into
    /// the executor's storage).
    pub fn set_input<K: InputKey, A: ToArg>(&self, key: K, array: A) -> Result<()> {
        self.set_input.invoke((key, array))
    }

    pub fn run(&self) -> Result<()> {
        self.run.invoke(())
    }

    /// A new array holding a copy of output `index`.
    pub fn get_output(&self, index: usize) -> Result<NDArray> {
        self.get_output.invoke((index,))
    }

    /// Copies output `index` into `out` (an NDArray or an `ndarray` mutable view).
    pub fn get_output_into<A: ToArg>(&self, index: usize, out: A) -> Result<()> {
        self.get_output.invoke((index, out))
    }

    pub fn get_num_outputs(&self) -> Result<usize> {
        self.get_num_outputs.invoke::<i64>(()).map(|n| n as usize)
    }

    pub fn get_input_index(&self, name: &str) -> Result<i64> {
        self.get_input_index.invoke((name,))
    }

    /// Loads parameters saved in TVM's params format.
    pub fn load_params(&self, params: &[u8]) -> Result<()> {
        self.load_params.invoke((params,))
    }

    /// The executor's other functions (`get_input`, `get_num_inputs`, ...).
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// Calls any of the executor's functions by name.
    pub fn call(&self, name: &str, args: &[Value]) -> Result<Value> {
        self.module.function(name)?.call(args)
    }
}
