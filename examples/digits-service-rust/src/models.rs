//! The models of a folder, loaded once and shared by every request.
//!
//! A model is served under its file's stem (the same folder layout as every polyffi server):
//! - `NAME.so` exported by TVM 0.18 (`export_library` of a graph executor factory): a
//!   [`GraphModule`] over the core's graph runner;
//! - `NAME.so` exported by TVM 0.2x's relax pipeline (a VM executable): a [`VirtualMachine`]
//!   over the core's VM runner, serving its function `main` (or `forward` when it has none);
//! - a folder `NAME/` holding `graph.json`, `params.bin` and one kernel library `*.so`: the
//!   three artifacts of a graph export (the repository's digits model).
//!
//! Each model's inputs and outputs (name, dtype, shape, -1 for a dynamic dimension) come from
//! the runner's `signature` query when the core has it, otherwise from [`derive`].
use std::collections::BTreeMap;
use std::path::Path;

use polyffi::{
    DataType, Device, GraphModule, Module, NDArray, Output, Value, VirtualMachine, VmArg,
};
use serde::Deserialize;

/// One input or output: name, dtype (`float32`, ...) and shape (-1: any size).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct TensorSpec {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<i64>,
}

enum Runner {
    Graph(GraphModule),
    Vm {
        vm: VirtualMachine,
        function: String,
    },
}

/// A loaded model: its runner and signature. `Send + Sync`: one per server, shared by every
/// request (the runners' calls are stateless and thread-safe).
pub struct Model {
    pub name: String,
    pub platform: &'static str,
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
    runner: Runner,
    _lib: Module,
}

fn io_error(path: &Path, e: std::io::Error) -> polyffi::Error {
    polyffi::Error::new("IOError", format!("{}: {e}", path.display()))
}

impl Model {
    /// Loads the model at `path` (a `.so`, or a folder of three artifacts) as `name`.
    pub fn load(name: &str, path: &Path) -> polyffi::Result<Model> {
        if path.is_dir() {
            return Model::load_parts(name, path);
        }
        let lib = Module::load(path)?;
        let runner = if lib.get_function("vm_load_executable", false)?.is_some() {
            let vm = VirtualMachine::new(&lib, Device::cpu(0))?;
            let function = ["main", "forward"]
                .into_iter()
                .find(|f| vm.has_function(f).unwrap_or(false))
                .ok_or_else(|| {
                    polyffi::Error::new(
                        "AttributeError",
                        "the executable has neither a 'main' nor a 'forward' function",
                    )
                })?
                .to_string();
            Runner::Vm { vm, function }
        } else if lib.get_function("default", true)?.is_some() {
            Runner::Graph(GraphModule::from_factory(&lib, Device::cpu(0))?)
        } else {
            return Err(polyffi::Error::new(
                "TypeError",
                format!(
                    "{}: neither a TVM graph export (no 'default') nor a relax executable (no \
                     'vm_load_executable')",
                    path.display()
                ),
            ));
        };
        Model::new(name, runner, lib)
    }

    /// A folder holding graph.json, params.bin and one kernel library.
    fn load_parts(name: &str, dir: &Path) -> polyffi::Result<Model> {
        let libs: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| io_error(dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "so"))
            .collect();
        let (graph, params) = (dir.join("graph.json"), dir.join("params.bin"));
        if libs.len() != 1 || !graph.is_file() || !params.is_file() {
            return Err(polyffi::Error::new(
                "TypeError",
                format!(
                    "{}: a model folder holds graph.json, params.bin and one kernel library \
                     (*.so); found {} libraries",
                    dir.display(),
                    libs.len()
                ),
            ));
        }
        let json = std::fs::read_to_string(&graph).map_err(|e| io_error(&graph, e))?;
        let blob = std::fs::read(&params).map_err(|e| io_error(&params, e))?;
        let lib = Module::load(&libs[0])?;
        let runner = Runner::Graph(GraphModule::from_parts(&json, &lib, &blob, Device::cpu(0))?);
        Model::new(name, runner, lib)
    }

    fn new(name: &str, runner: Runner, lib: Module) -> polyffi::Result<Model> {
        let (inputs, outputs) = match &runner {
            Runner::Graph(gm) => graph_signature(gm)?,
            Runner::Vm { vm, function } => vm_signature(vm, &lib, function)?,
        };
        Ok(Model {
            name: name.to_string(),
            platform: match runner {
                Runner::Graph(_) => "tvm_graph_executor",
                Runner::Vm { .. } => "tvm_relax_vm",
            },
            inputs,
            outputs,
            runner,
            _lib: lib,
        })
    }

    /// Runs the model on one array per input, in the order of [`Model::inputs`]; blocking and
    /// thread-safe.
    pub fn infer(&self, inputs: &[NDArray]) -> polyffi::Result<Vec<NDArray>> {
        let args: Vec<&dyn VmArg> = inputs.iter().map(|a| a as &dyn VmArg).collect();
        match &self.runner {
            Runner::Graph(gm) => gm.infer(&args),
            Runner::Vm { vm, function } => {
                let mut out = Vec::new();
                flatten(vm.invoke(function, &args)?, &mut out)?;
                Ok(out)
            }
        }
    }
}

impl Model {
    /// [`Model::infer`] on the core's worker pool: submitted now (a full queue is an `Err` of
    /// kind `QueueFullError` here), the returned future borrows nothing and blocks no thread.
    pub fn infer_async(
        &self,
        inputs: &[NDArray],
    ) -> polyffi::Result<impl std::future::Future<Output = polyffi::Result<Vec<NDArray>>> + Send>
    {
        enum Call<G, V> {
            Graph(G),
            Vm(V),
        }
        let call = match &self.runner {
            Runner::Graph(gm) => Call::Graph(gm.infer_async(inputs)?),
            Runner::Vm { vm, function } => Call::Vm(vm.invoke_async(function, inputs)?),
        };
        Ok(async move {
            match call {
                Call::Graph(f) => f.await,
                Call::Vm(f) => {
                    let mut out = Vec::new();
                    flatten(f.await?, &mut out)?;
                    Ok(out)
                }
            }
        })
    }
}

/// The tensors of a result, a relax tuple (nested or not) flattened in order.
fn flatten(o: Output, out: &mut Vec<NDArray>) -> polyffi::Result<()> {
    if o.is_tuple() {
        for item in o.into_tuple()? {
            flatten(item, out)?;
        }
        return Ok(());
    }
    out.push(o.into_tensor()?);
    Ok(())
}

/// Every model of `dir`, by name; what cannot be served is reported on stderr and skipped.
pub fn load_dir(dir: &Path) -> std::io::Result<BTreeMap<String, Model>> {
    let mut models = BTreeMap::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let name = if path.is_dir() {
            if !path.join("graph.json").is_file() {
                continue;
            }
            entry.file_name().to_string_lossy().into_owned()
        } else if path.extension().is_some_and(|e| e == "so") {
            path.file_stem().unwrap().to_string_lossy().into_owned()
        } else {
            continue;
        };
        match Model::load(&name, &path) {
            Ok(m) => {
                models.insert(name, m);
            }
            Err(e) => eprintln!("polyffi-serve: skipping {}: {e}", path.display()),
        }
    }
    Ok(models)
}

// ---- signatures ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct Signature {
    inputs: Vec<Option<TensorSpecJson>>,
    outputs: Option<Vec<TensorSpecJson>>,
}

#[derive(Deserialize)]
struct TensorSpecJson {
    name: String,
    dtype: Option<String>,
    shape: Option<Vec<i64>>,
}

/// The runner's `signature` query (JSON), if the core has it.
fn core_signature(runner: &Module, args: &[Value]) -> polyffi::Result<Option<Signature>> {
    let Some(f) = runner.get_function("signature", false)? else {
        return Ok(None);
    };
    let text = String::try_from(f.call(args)?)?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| polyffi::Error::new("ValueError", format!("signature: {e}")))
}

fn spec(s: TensorSpecJson) -> polyffi::Result<TensorSpec> {
    match (s.dtype, s.shape) {
        (Some(dtype), Some(shape)) => Ok(TensorSpec {
            name: s.name,
            dtype,
            shape,
        }),
        _ => Err(polyffi::Error::new(
            "TypeError",
            format!(
                "input '{}' is not a tensor of known dtype and rank (only tensors are served)",
                s.name
            ),
        )),
    }
}

fn graph_signature(gm: &GraphModule) -> polyffi::Result<(Vec<TensorSpec>, Vec<TensorSpec>)> {
    let runner = gm.runner().expect("made over a runner");
    if let Some(sig) = core_signature(&runner, &[])? {
        let inputs = sig.inputs.into_iter().flatten().map(spec);
        let outputs = sig.outputs.unwrap_or_default().into_iter().map(spec);
        return Ok((
            inputs.collect::<Result<_, _>>()?,
            outputs.collect::<Result<_, _>>()?,
        ));
    }
    derive::graph(gm)
}

fn vm_signature(
    vm: &VirtualMachine,
    lib: &Module,
    function: &str,
) -> polyffi::Result<(Vec<TensorSpec>, Vec<TensorSpec>)> {
    let (inputs, outputs) = match core_signature(vm.runner(), &[Value::Str(function.into())])? {
        Some(sig) => (
            sig.inputs
                .into_iter()
                .flatten()
                .map(spec)
                .collect::<polyffi::Result<Vec<_>>>()?,
            sig.outputs,
        ),
        None => (derive::vm_inputs(vm, lib, function)?, None),
    };
    let outputs = match outputs {
        Some(outs) => outs.into_iter().map(spec).collect::<polyffi::Result<_>>()?,
        // Outputs the probe cannot find stay unknown (metadata lists none; infer returns all).
        None => derive::vm_outputs(vm, function, &inputs).unwrap_or_else(|e| {
            eprintln!("polyffi-serve: {function}: outputs unknown ({e})");
            Vec::new()
        }),
    };
    Ok((inputs, outputs))
}

/// Signatures derived in the server, for what the core's `signature` query does not give.
pub mod derive {
    use super::*;

    fn of_array(name: String, a: &NDArray) -> TensorSpec {
        TensorSpec {
            name,
            dtype: a.dtype().to_string(),
            shape: a.shape().to_vec(),
        }
    }

    /// A graph model's inputs and outputs from its executor's storage (static shapes).
    pub fn graph(gm: &GraphModule) -> polyffi::Result<(Vec<TensorSpec>, Vec<TensorSpec>)> {
        let mut inputs = Vec::new();
        for name in gm.input_names()? {
            let a = NDArray::try_from(gm.call("get_input", &[Value::Str(name.clone())])?)?;
            inputs.push(of_array(name, &a));
        }
        let mut outputs = Vec::new();
        for i in 0..gm.get_num_outputs()? {
            outputs.push(of_array(format!("output_{i}"), &gm.get_output(i)?));
        }
        Ok((inputs, outputs))
    }

    /// A relax function's parameters from the annotations TVM records in the executable's
    /// error contexts (`ErrorContext(fn=forward, loc=param[0], param=x,
    /// annotation=R.Tensor((n, 16), dtype="float32"))`), as the executable's (`lib`) `stats`
    /// lists them.
    pub fn vm_inputs(
        vm: &VirtualMachine,
        lib: &Module,
        function: &str,
    ) -> polyffi::Result<Vec<TensorSpec>> {
        let names = vm.param_names(function)?;
        let stats = String::try_from(lib.function("stats")?.call(&[])?)?;
        names
            .into_iter()
            .enumerate()
            .map(|(i, name)| {
                let key = format!("fn={function}, loc=param[{i}], param={name}, annotation=");
                stats
                    .find(&key)
                    .and_then(|at| parse_tensor_annotation(&stats[at + key.len()..]))
                    .map(|(dtype, shape)| TensorSpec {
                        name: name.clone(),
                        dtype,
                        shape,
                    })
                    .ok_or_else(|| {
                        polyffi::Error::new(
                            "TypeError",
                            format!(
                                "input '{name}' is not a tensor of known dtype and rank (only \
                             tensors are served)"
                            ),
                        )
                    })
            })
            .collect()
    }

    /// `R.Tensor((1, n, 16), dtype="float32")...` -> ("float32", [1, -1, 16]).
    pub fn parse_tensor_annotation(s: &str) -> Option<(String, Vec<i64>)> {
        let rest = s.strip_prefix("R.Tensor((")?;
        let (dims, rest) = rest.split_once(')')?;
        let shape = dims
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| d.parse::<i64>().unwrap_or(-1))
            .collect();
        let rest = rest.strip_prefix(", dtype=\"")?;
        let (dtype, _) = rest.split_once('"')?;
        Some((dtype.to_string(), shape))
    }

    /// A relax function's outputs, which the executable does not record: the function run on
    /// zeros with every dynamic dimension at 1 and again at 2; a dimension that differs is -1.
    pub fn vm_outputs(
        vm: &VirtualMachine,
        function: &str,
        inputs: &[TensorSpec],
    ) -> polyffi::Result<Vec<TensorSpec>> {
        let probe = |dynamic: i64| -> polyffi::Result<Vec<NDArray>> {
            let arrays = inputs
                .iter()
                .map(|s| {
                    let shape: Vec<i64> = s
                        .shape
                        .iter()
                        .map(|&d| if d < 0 { dynamic } else { d })
                        .collect();
                    let dtype = DataType::parse(&s.dtype)?;
                    let bytes = shape.iter().product::<i64>() as usize
                        * (dtype.bits as usize).div_ceil(8)
                        * dtype.lanes as usize;
                    NDArray::from_bytes(&vec![0u8; bytes], &shape, dtype)
                })
                .collect::<polyffi::Result<Vec<_>>>()?;
            let args: Vec<&dyn VmArg> = arrays.iter().map(|a| a as &dyn VmArg).collect();
            let mut out = Vec::new();
            flatten(vm.invoke(function, &args)?, &mut out)?;
            Ok(out)
        };
        let one = probe(1)?;
        let dynamic = inputs.iter().any(|s| s.shape.iter().any(|&d| d < 0));
        let two = if dynamic { probe(2)? } else { one.clone() };
        Ok(one
            .iter()
            .zip(&two)
            .enumerate()
            .map(|(i, (a, b))| TensorSpec {
                name: format!("output_{i}"),
                dtype: a.dtype().to_string(),
                shape: a
                    .shape()
                    .iter()
                    .zip(b.shape())
                    .map(|(&x, &y)| if x == y { x } else { -1 })
                    .collect(),
            })
            .collect())
    }
}
