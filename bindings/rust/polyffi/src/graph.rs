//! [`GraphModule`]: the graph executor (`tvm.graph_executor.create`) with typed methods. The
//! executor's functions are looked up once; host arrays (`ndarray` views) pass zero-copy.
//!
//! [`GraphModule::from_factory`] is backed by the core's model runner (`polyffi.runner.graph`):
//! [`GraphModule::infer`] takes `&self`, is stateless (inputs in, outputs out) and runs on an
//! executor of the runner's pool, which share the model's weights, so one `GraphModule` (`Send +
//! Sync`) serves many threads at once without a lock.
use crate::vm::{call_staged, Output};
use crate::{
    Array, Device, Error, Function, IntoArgs, Module, NDArray, Result, ToArg, Value, VmArg,
};

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
    /// The core's model runner and its `run`, for a GraphModule made over one.
    runner: Option<(Module, Function)>,
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
    /// its `default(device)` first, which [`from_factory`](Self::from_factory) does; so is any
    /// other module that is not a graph executor.
    pub fn new(module: Module) -> Result<GraphModule> {
        Function::global("polyffi.runner.check_graph_executor")?.invoke::<()>((&module,))?;
        Ok(GraphModule {
            set_input: module.function("set_input")?,
            run: module.function("run")?,
            get_output: module.function("get_output")?,
            get_num_outputs: module.function("get_num_outputs")?,
            get_input_index: module.function("get_input_index")?,
            load_params: module.function("load_params")?,
            module,
            runner: None,
        })
    }

    /// A GraphModule over `polyffi.runner.graph(args...)` and the runner's own executor.
    fn from_runner(args: impl IntoArgs) -> Result<GraphModule> {
        let runner: Module = Function::global("polyffi.runner.graph")?.invoke(args)?;
        let mut gm = GraphModule::new(runner.function("executor")?.invoke::<Module>(())?)?;
        let run = runner.function("run")?;
        gm.runner = Some((runner, run));
        Ok(gm)
    }

    /// The executor of a library exported by TVM (`lib.export_library`), loaded as its
    /// `GraphExecutorFactory`: `lib["default"](device)`, with the factory's params already set.
    /// The stateful methods use an executor of the runner's own; [`infer`](Self::infer) uses
    /// the runner's pool. A module that is not a factory is the runner's TypeError.
    pub fn from_factory(lib: &Module, device: Device) -> Result<GraphModule> {
        GraphModule::from_runner((lib, device.device_type as i64, device.device_id as i64))
    }

    /// The three artifacts of an export (graph JSON, kernel library, params blob) over the
    /// core's model runner, so [`infer`](Self::infer) is available as with
    /// [`from_factory`](Self::from_factory).
    pub fn from_parts(
        graph_json: &str,
        lib: &Module,
        params: &[u8],
        device: Device,
    ) -> Result<GraphModule> {
        GraphModule::from_runner((
            graph_json,
            lib,
            params,
            device.device_type as i64,
            device.device_id as i64,
        ))
    }

    /// Runs the graph on `inputs` (by position: the graph's inputs that are not weights, in
    /// order) and returns every output as a new array. Stateless and thread-safe.
    pub fn infer(&self, inputs: &[&dyn VmArg]) -> Result<Vec<NDArray>> {
        outputs(call_staged(self.runner_run()?, &[], inputs)?)
    }

    /// [`infer`](Self::infer) on the core's worker pool: the arrays are retained until the call
    /// ends, so the future borrows nothing (`Send + 'static`; any executor). Submitted here: a
    /// full queue is an `Err` of kind `QueueFullError` at once, not from the future.
    pub fn infer_async(
        &self,
        inputs: &[NDArray],
    ) -> Result<impl std::future::Future<Output = Result<Vec<NDArray>>> + Send + 'static> {
        let args: Vec<Value> = inputs.iter().cloned().map(Value::NDArray).collect();
        let call = self.runner_run()?.call_async(&args)?;
        Ok(async move { outputs(call.await?) })
    }

    /// As [`infer`](Self::infer) with inputs by name.
    pub fn infer_named(&self, inputs: &[(&str, &dyn VmArg)]) -> Result<Vec<NDArray>> {
        let args: Vec<&dyn VmArg> = inputs.iter().flat_map(|(n, a)| [n as _, *a]).collect();
        outputs(call_staged(self.runner_run()?, &[], &args)?)
    }

    /// The graph's inputs that are not weights: what [`infer`](Self::infer) takes by position.
    pub fn input_names(&self) -> Result<Vec<String>> {
        let runner = self.runner().ok_or_else(no_runner)?;
        let names: Array = runner.function("input_names")?.invoke(())?;
        names.to_vec()?.into_iter().map(String::try_from).collect()
    }

    /// The core's model runner behind [`infer`](Self::infer), if any.
    pub fn runner(&self) -> Option<Module> {
        self.runner.as_ref().map(|(m, _)| m.clone())
    }

    fn runner_run(&self) -> Result<&Function> {
        self.runner.as_ref().map(|(_, f)| f).ok_or_else(no_runner)
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

    /// [`run`](Self::run) on the core's worker pool: `g.run_async()?.await?` (one run at a
    /// time per GraphModule, as for `run`). Dropping the future stops a started run between
    /// nodes.
    pub fn run_async(&self) -> Result<crate::CallFuture> {
        self.run.call_async(&[])
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

    /// Loads parameters saved in TVM's params format into the executor; [`infer`](Self::infer)
    /// takes them too (the runner's `load_params` loads its own executor and swaps its pool's
    /// weights; calls in flight finish on the old ones).
    pub fn load_params(&self, params: &[u8]) -> Result<()> {
        match &self.runner {
            Some((runner, _)) => runner.function("load_params")?.invoke((params,)),
            None => self.load_params.invoke((params,)),
        }
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

fn no_runner() -> Error {
    Error::type_error(
        "GraphModule::infer needs a GraphModule made by GraphModule::from_factory (a bare \
         executor has no model runner)",
    )
}

/// The runner's outputs (an Array of arrays) as a `Vec`.
fn outputs(v: Value) -> Result<Vec<NDArray>> {
    Output::from_value(v)?.into_tensors()
}
