//! Models compiled by Apache TVM 0.18 (tests/tvm_models/tvm018) through the Rust binding.
//!
//! Every graph fixture in both loadable forms reproduces the outputs TVM's own runtime computed,
//! bit for bit (raw bytes compared): the exported factory library through
//! `GraphModule::from_factory` (= `GraphModule::new(lib["default"](cpu))`), and the three
//! artifacts (graph.json, kernels.so, params.bin) through `tvm.graph_executor.create` and
//! `load_params`. The TE kernels take scalars and call back into a Rust closure registered as
//! the global `polyffi_test.add_one`.
mod common;

use std::path::{Path, PathBuf};

use polyffi::{DataType, Device, Function, GraphModule, Module, NDArray, Value};
use serde_json::Value as Json;

use common::{dtype_of, load_tensor, raw, read_json, shape_of};

fn fixtures() -> PathBuf {
    common::repo_root().join("tests/tvm_models/tvm018")
}

/// Asserts `got` has the dtype, shape and exact bytes of TVM's output `desc`.
fn assert_same_as_tvm(got: &NDArray, dir: &Path, desc: &Json, what: &str) {
    assert_eq!(got.dtype(), dtype_of(desc), "{what}: dtype");
    assert_eq!(got.shape(), shape_of(desc).as_slice(), "{what}: shape");
    let expected = raw(dir, desc);
    let bytes = got.to_bytes().unwrap();
    assert_eq!(bytes.len(), expected.len(), "{what}: size");
    if let Some(i) = bytes.iter().zip(&expected).position(|(a, b)| a != b) {
        panic!(
            "{what}: differs from TVM's output at byte {i} of {} ({} != {})",
            expected.len(),
            bytes[i],
            expected[i]
        );
    }
}

/// Sets every input of the fixture, runs, and compares every output with TVM's.
fn check_outputs(g: &GraphModule, name: &str, form: &str) {
    let dir = fixtures().join(name);
    let io = read_json(&dir.join("io.json"));
    for input in io["inputs"].as_array().unwrap() {
        g.set_input(input["name"].as_str().unwrap(), load_tensor(&dir, input))
            .unwrap();
    }
    g.run().unwrap();
    let outputs = io["outputs"].as_array().unwrap();
    assert!(!outputs.is_empty());
    assert_eq!(g.get_num_outputs().unwrap(), outputs.len(), "{name}");
    for (i, desc) in outputs.iter().enumerate() {
        let got = g.get_output(i).unwrap();
        assert_same_as_tvm(&got, &dir, desc, &format!("{name} ({form}) output {i}"));
    }
}

fn factory(name: &str) -> Module {
    Module::load(fixtures().join(name).join("factory.so")).unwrap()
}

fn through_factory(name: &str) {
    let lib = factory(name);
    assert_eq!(lib.type_key().unwrap(), "GraphExecutorFactory");
    let imports: Vec<String> = lib
        .imports()
        .unwrap()
        .iter()
        .map(|m| m.type_key().unwrap())
        .collect();
    assert_eq!(imports, ["library"]);
    check_outputs(
        &GraphModule::from_factory(&lib, Device::cpu(0)).unwrap(),
        name,
        "factory",
    );
    // The one-line path spelled out: the factory's default(device) is the executor.
    let default = lib.function("default").unwrap();
    let executor: Module = default.invoke((Device::cpu(0),)).unwrap();
    check_outputs(&GraphModule::new(executor).unwrap(), name, "default(cpu)");
}

fn through_three_artifacts(name: &str) {
    let dir = fixtures().join(name);
    let graph = std::fs::read_to_string(dir.join("graph.json")).unwrap();
    let kernels = Module::load(dir.join("kernels.so")).unwrap();
    let g = GraphModule::create(&graph, &kernels, Device::cpu(0)).unwrap();
    g.load_params(&std::fs::read(dir.join("params.bin")).unwrap())
        .unwrap();
    check_outputs(&g, name, "three artifacts");
}

/// One test per fixture and form; `every_graph_fixture_is_covered` keeps this list and the
/// manifest in step.
macro_rules! graph_fixtures {
    ($($name:ident),* $(,)?) => {
        const GRAPHS: &[&str] = &[$(stringify!($name)),*];
        mod factory_form {
            $( #[test] fn $name() { super::through_factory(stringify!($name)); } )*
        }
        mod three_artifacts_form {
            $( #[test] fn $name() { super::through_three_artifacts(stringify!($name)); } )*
        }
    };
}

graph_fixtures!(
    digits_b1,
    digits_b359,
    conv_b1,
    conv_b16,
    multi_io_b1,
    multi_io_b64
);

#[test]
fn every_graph_fixture_is_covered() {
    let manifest = read_json(&fixtures().join("manifest.json"));
    assert_eq!(manifest["tvm_version"], "0.18.0");
    let mut listed: Vec<&str> = manifest["fixtures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .filter(|&f| f != "te_kernels")
        .collect();
    listed.sort_unstable();
    let mut covered = GRAPHS.to_vec();
    covered.sort_unstable();
    assert_eq!(listed, covered);
}

#[test]
fn factory_accessors() {
    let dir = fixtures().join("conv_b1");
    let lib = factory("conv_b1");
    let graph: String = lib.function("get_graph_json").unwrap().invoke(()).unwrap();
    assert_eq!(
        graph,
        std::fs::read_to_string(dir.join("graph.json")).unwrap()
    );

    let params: polyffi::Map = lib
        .function("get_graph_params")
        .unwrap()
        .invoke(())
        .unwrap();
    let mut names = Vec::new();
    for (k, v) in params.items().unwrap() {
        match (k, v) {
            (Value::Str(k), Value::NDArray(a)) => {
                assert!(a.size_bytes() > 0, "{k}");
                names.push(k);
            }
            (k, v) => panic!("param {k:?} -> {}", v.type_name()),
        }
    }
    names.sort();
    let io = read_json(&dir.join("io.json"));
    let want: Vec<&str> = io["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(names, want);

    let bare: Module = lib.function("remove_params").unwrap().invoke(()).unwrap();
    assert_eq!(bare.type_key().unwrap(), "GraphExecutorFactory");
    let none: polyffi::Map = bare
        .function("get_graph_params")
        .unwrap()
        .invoke(())
        .unwrap();
    assert_eq!(none.len().unwrap(), 0);
    // The original keeps its params.
    let still: polyffi::Map = lib
        .function("get_graph_params")
        .unwrap()
        .invoke(())
        .unwrap();
    assert_eq!(still.len().unwrap(), want.len());
}

#[test]
fn graph_module_rejects_the_factory_itself() {
    let lib = factory("digits_b1");
    let err = GraphModule::new(lib.clone()).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(err.message().contains("GraphExecutorFactory"), "{err}");
    assert!(err.message().contains("default(device)"), "{err}");
    // default needs its device.
    let err = lib.function("default").unwrap().call(&[]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    // A kernels library is not a factory.
    let kernels = Module::load(fixtures().join("digits_b1/kernels.so")).unwrap();
    let err = GraphModule::from_factory(&kernels, Device::cpu(0)).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(
        err.message().contains("not a GraphExecutorFactory"),
        "{err}"
    );
    // The factory still works after the failed attempts.
    check_outputs(
        &GraphModule::from_factory(&lib, Device::cpu(0)).unwrap(),
        "digits_b1",
        "factory",
    );
}

#[test]
fn digits_compiled_by_tvm_agrees_with_the_demo() {
    let model = common::repo_root().join("examples/digits/model");
    let expected = read_json(&model.join("expected.json"));
    let want: Vec<usize> = expected["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap() as usize)
        .collect();
    let x = std::fs::read(model.join("test_x.bin")).unwrap();
    assert_eq!(x.len(), want.len() * 64 * 4);
    let g = GraphModule::from_factory(&factory("digits_b359"), Device::cpu(0)).unwrap();
    let input = NDArray::from_bytes(&x, &[want.len() as i64, 64], DataType::FLOAT32).unwrap();
    g.set_input("data", &input).unwrap();
    g.run().unwrap();
    let out = g.get_output(0).unwrap();
    assert_eq!(out.shape(), &[want.len() as i64, 10]);
    let got: Vec<usize> = out
        .as_slice::<f32>()
        .unwrap()
        .chunks_exact(10)
        .map(|row| {
            row.iter()
                .enumerate()
                .fold(0, |best, (i, &p)| if p > row[best] { i } else { best })
        })
        .collect();
    assert_eq!(got, want);
}

/// Removes the global on drop, so a failing assertion does not leave it registered.
struct GlobalGuard(&'static str);

impl Drop for GlobalGuard {
    fn drop(&mut self) {
        polyffi::remove_global(self.0).unwrap();
    }
}

const ADD_ONE: &str = "polyffi_test.add_one";

fn run_kernel(dir: &Path, case: &Json) -> Result<NDArray, polyffi::Error> {
    let lib = Module::load(dir.join(case["library"].as_str().unwrap()))?;
    let mut args: Vec<Value> = case["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| {
            if arg.get("file").is_some() {
                Value::NDArray(load_tensor(dir, arg))
            } else if let Some(x) = arg.get("float") {
                Value::Float(x.as_f64().unwrap())
            } else {
                Value::Int(arg["int"].as_i64().unwrap())
            }
        })
        .collect();
    let out = &case["output"];
    // Zero-filled, so a kernel that wrote nothing cannot match by accident.
    let zeros = vec![0u8; raw(dir, out).len()];
    args.push(Value::NDArray(NDArray::from_bytes(
        &zeros,
        &shape_of(out),
        dtype_of(out),
    )?));
    lib.function(case["function"].as_str().unwrap())?
        .call(&args)?;
    match args.pop() {
        Some(Value::NDArray(out)) => Ok(out),
        _ => unreachable!(),
    }
}

#[test]
fn te_kernels_match_tvm() {
    let dir = fixtures().join("te_kernels");
    let io = read_json(&dir.join("io.json"));
    let cases = io["cases"].as_array().unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["vadd", "scale_shift", "host_call"]);

    // Before the host global exists, host_call fails with an error naming it (and nothing is
    // cached: the library resolves the name again on the next call).
    let host_call = cases.iter().find(|c| c["name"] == "host_call").unwrap();
    assert!(Function::get_global(ADD_ONE).is_none());
    let err = run_kernel(&dir, host_call).unwrap_err();
    assert!(
        err.to_string().contains(ADD_ONE),
        "error should name the missing global: {err}"
    );

    // The host global host_call.so calls: dst = src + 1 (float32), written in place.
    let add_one = Function::from_typed(|src: NDArray, mut dst: NDArray| {
        let src = src.as_slice::<f32>()?;
        let dst = dst.as_mut_slice::<f32>()?;
        if src.len() != dst.len() {
            return Err(polyffi::Error::new("ValueError", "add_one: sizes differ"));
        }
        for (d, s) in dst.iter_mut().zip(src) {
            *d = s + 1.0;
        }
        Ok(())
    })
    .unwrap();
    add_one.register_global(ADD_ONE, true).unwrap();
    let guard = GlobalGuard(ADD_ONE);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let got = run_kernel(&dir, case).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_same_as_tvm(&got, &dir, &case["output"], name);
    }
    drop(guard);
    // Removed from the registry. (host_call.so keeps the function it resolved: TVM's generated
    // code caches the handle in the library, and polyffi's library modules, never unloaded,
    // hold what they looked up, as TVM's module import cache does.)
    assert!(Function::get_global(ADD_ONE).is_none());
    assert!(!polyffi::list_global_names()
        .unwrap()
        .iter()
        .any(|n| n == ADD_ONE));
}

#[test]
fn kernels_reject_bad_arguments() {
    let dir = fixtures().join("te_kernels");
    let vadd = Module::load(dir.join("vadd.so"))
        .unwrap()
        .function("vadd")
        .unwrap();
    let a = NDArray::from_slice(&[1f32; 10], &[10]).unwrap();
    let b = NDArray::from_slice(&[2f32; 20], &[20]).unwrap();
    let out = NDArray::from_slice(&[0f32; 10], &[10]).unwrap();
    // TVM's argument checks run inside the kernel; they become errors here.
    let err = vadd.invoke::<()>((&a, &b, &out)).unwrap_err();
    assert!(!err.message().is_empty());
    let doubles = NDArray::from_slice(&[0f64; 10], &[10]).unwrap();
    let err = vadd.invoke::<()>((&a, &doubles, &out)).unwrap_err();
    assert!(!err.message().is_empty());
    let err = vadd.invoke::<()>((1i64, 2i64, 3i64)).unwrap_err();
    assert!(!err.message().is_empty());
    let err = vadd.invoke::<()>((&a,)).unwrap_err();
    assert!(!err.message().is_empty());
    // The kernel still computes after the rejected calls.
    let c = NDArray::from_slice(&[2f32; 10], &[10]).unwrap();
    vadd.invoke::<()>((&a, &c, &out)).unwrap();
    assert_eq!(out.as_slice::<f32>().unwrap(), &[3f32; 10]);
}

/// An HWC image transposed to the model's NCHW (a strided `ndarray` view) is copied by
/// `set_input`, as TVM's frontends copy it, in every binding (the core gathers it).
#[test]
fn set_input_copies_a_transposed_image() {
    let dir = fixtures().join("conv_b1");
    let io = read_json(&dir.join("io.json"));
    let input = &io["inputs"][0];
    let bytes = raw(&dir, input);
    let values: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let nchw = ndarray::Array4::from_shape_vec((1, 3, 16, 16), values).unwrap();
    let hwc = nchw
        .index_axis(ndarray::Axis(0), 0)
        .permuted_axes([1, 2, 0])
        .as_standard_layout()
        .into_owned();
    assert!(hwc.is_standard_layout());
    let chw = hwc
        .view()
        .permuted_axes([2, 0, 1])
        .insert_axis(ndarray::Axis(0));
    assert!(!chw.is_standard_layout());
    assert_eq!(chw, nchw);
    let g = GraphModule::from_factory(&factory("conv_b1"), Device::cpu(0)).unwrap();
    g.set_input("data", &chw).unwrap();
    g.run().unwrap();
    assert_same_as_tvm(
        &g.get_output(0).unwrap(),
        &dir,
        &io["outputs"][0],
        "conv_b1 transposed",
    );
}

/// A bad input key reads the same in every binding: KeyError / IndexError naming set_input.
#[test]
fn set_input_bad_key_is_the_same_error_in_every_binding() {
    let dir = fixtures().join("digits_b1");
    let io = read_json(&dir.join("io.json"));
    let x = load_tensor(&dir, &io["inputs"][0]);
    let g = GraphModule::from_factory(&factory("digits_b1"), Device::cpu(0)).unwrap();
    let err = g.set_input("dta", &x).unwrap_err();
    assert_eq!(err.kind(), "KeyError");
    assert_eq!(
        err.message(),
        "set_input: the graph has no input named 'dta'"
    );
    let err = g.set_input(7usize, &x).unwrap_err();
    assert_eq!(err.kind(), "IndexError");
    assert!(
        err.message()
            .starts_with("set_input: input index 7 out of range"),
        "{err}"
    );
}
