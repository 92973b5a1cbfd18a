//! TVM 0.27's runtime-library fixtures (tests/tvm_models/tvm027/runtime) from Rust: relax models
//! whose executables call TVM's runtime globals at run time (sort, argsort, top-k, seeded random,
//! unique, nonzero, tensor_to_shape, ...) or take Shape and int arguments, with two symbolic
//! dimensions, float16/int kernels, recursion and nested tuples. Every run's result must equal
//! what TVM 0.27's own runtime returned: tensors bit for bit (dtype, shape, bytes), Shapes as
//! `Value::Shape` and ints by value, tuples recursively.
mod common;

use std::path::{Path, PathBuf};

use polyffi::{Device, Module, Output, Shape, Value, VirtualMachine, VmArg};
use serde_json::Value as Json;

use common::{dtype_of, load_tensor, raw, read_json, shape_of};

fn runtime_dir() -> PathBuf {
    common::repo_root().join("tests/tvm_models/tvm027/runtime")
}

fn models() -> Vec<String> {
    let manifest = read_json(&common::repo_root().join("tests/tvm_models/tvm027/manifest.json"));
    let mut names: Vec<String> = manifest["runtime"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

fn dims(desc: &Json) -> Vec<i64> {
    desc["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_i64().unwrap())
        .collect()
}

/// An argument as the VM takes it: an NDArray, a Shape or an int.
fn argument(dir: &Path, desc: &Json) -> Value {
    match desc["kind"].as_str().unwrap() {
        "tensor" => Value::NDArray(load_tensor(dir, desc)),
        "shape" => Value::Shape(Shape::from(dims(desc))),
        "int" => Value::Int(desc["value"].as_i64().unwrap()),
        other => panic!("unknown input kind {other}"),
    }
}

fn check(got: &Output, want: &Json, dir: &Path, at: &str) {
    match want["kind"].as_str().unwrap() {
        "tensor" => {
            let t = got
                .as_tensor()
                .unwrap_or_else(|| panic!("{at}: {got:?} is not a tensor"));
            assert_eq!(t.dtype(), dtype_of(want), "{at}: dtype");
            assert_eq!(t.shape(), shape_of(want).as_slice(), "{at}: shape");
            assert!(
                t.to_bytes().unwrap() == raw(dir, want),
                "{at}: tensor differs from TVM's"
            );
        }
        "shape" => match got {
            Output::Other(Value::Shape(s)) => assert_eq!(s.as_slice(), dims(want), "{at}"),
            other => panic!("{at}: {other:?} is not a Shape"),
        },
        "int" => match got {
            Output::Other(Value::Int(i)) => assert_eq!(Some(*i), want["value"].as_i64(), "{at}"),
            other => panic!("{at}: {other:?} is not an int"),
        },
        "tuple" => {
            let Output::Tuple(items) = got else {
                panic!("{at}: {got:?} is not a tuple")
            };
            let want_items = want["items"].as_array().unwrap();
            assert_eq!(items.len(), want_items.len(), "{at}: tuple size");
            for (i, (g, w)) in items.iter().zip(want_items).enumerate() {
                check(g, w, dir, &format!("{at}[{i}]"));
            }
        }
        other => panic!("unknown output kind {other}"),
    }
}

#[test]
fn every_runtime_fixture_is_listed() {
    let mut on_disk: Vec<String> = std::fs::read_dir(runtime_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("io.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    assert!(!on_disk.is_empty(), "no runtime fixtures");
    assert_eq!(on_disk, models());
}

#[test]
fn every_runtime_fixture_matches_tvm() {
    common::testing();
    for model in models() {
        let dir = runtime_dir().join(&model);
        let io = read_json(&dir.join("io.json"));
        let lib = Module::load(runtime_dir().join(io["library"].as_str().unwrap())).unwrap();
        let vm = VirtualMachine::new(&lib, Device::cpu(0)).unwrap();
        let function = io["function"].as_str().unwrap();
        for (r, run) in io["runs"].as_array().unwrap().iter().enumerate() {
            let args: Vec<Value> = run["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| argument(&dir, d))
                .collect();
            let refs: Vec<&dyn VmArg> = args.iter().map(|a| a as &dyn VmArg).collect();
            let at = format!("{model} run {r}");
            let out = vm
                .invoke(function, &refs)
                .unwrap_or_else(|e| panic!("{at}: {e}"));
            check(&out, &run["output"], &dir, &at);
            // Again on the same VM: the same result, the first one (still held) intact.
            let again = vm.invoke(function, &refs).unwrap();
            check(&again, &run["output"], &dir, &format!("{at} (second call)"));
            check(&out, &run["output"], &dir, &format!("{at} (first result)"));
        }
    }
}

#[test]
fn a_shape_parameter_refuses_an_array_and_an_int_parameter_a_shape() {
    if !models().iter().any(|m| m == "shape_int_args") {
        return;
    }
    let dir = runtime_dir().join("shape_int_args");
    let io = read_json(&dir.join("io.json"));
    let lib = Module::load(runtime_dir().join(io["library"].as_str().unwrap())).unwrap();
    let vm = VirtualMachine::new(&lib, Device::cpu(0)).unwrap();
    let inputs = io["runs"][0]["inputs"].as_array().unwrap();
    let x = argument(&dir, &inputs[0]);
    let s = argument(&dir, &inputs[1]);
    let k = argument(&dir, &inputs[2]);
    let Value::Shape(dims) = &s else {
        panic!("not a shape")
    };
    let as_array = Value::Array(
        polyffi::Array::new(&dims.iter().map(|&d| Value::Int(d)).collect::<Vec<_>>()).unwrap(),
    );
    assert!(vm.invoke("forward", &[&x, &as_array, &k]).is_err());
    assert!(vm.invoke("forward", &[&x, &s, &s]).is_err());
    assert!(vm.invoke("forward", &[&x, &s, &k]).is_ok());
}
