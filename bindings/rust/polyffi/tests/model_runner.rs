//! The core's model runner through the Rust binding: one loaded model shared by 8 threads.
//! `VirtualMachine::invoke` and `GraphModule::infer` take `&self` and run on the runner's pool
//! (sharing the weights): every thread must get exactly the outputs one thread gets.
mod common;

use std::path::PathBuf;

use polyffi::{DataType, Device, GraphModule, Module, NDArray, VirtualMachine, VmArg};
use serde_json::Value as Json;

const THREADS: usize = 8;
const ROUNDS: usize = 20;

fn fixtures() -> PathBuf {
    common::repo_root().join("tests/tvm_models")
}

fn read_json(path: PathBuf) -> Json {
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The inputs of `descs` read from `dir`, float32 ones scaled by 1 + k/8.
fn variant(dir: &PathBuf, descs: &Json, k: usize) -> Vec<NDArray> {
    descs
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let shape: Vec<i64> = d["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect();
            let dtype: DataType = d["dtype"].as_str().unwrap().parse().unwrap();
            let bytes = std::fs::read(dir.join(d["file"].as_str().unwrap())).unwrap();
            let mut a = NDArray::empty(&shape, dtype, Device::cpu(0)).unwrap();
            if d["dtype"] == "float32" {
                let scaled: Vec<u8> = bytes
                    .chunks_exact(4)
                    .flat_map(|c| {
                        let x = f32::from_le_bytes(c.try_into().unwrap());
                        (x * (1.0 + k as f32 / 8.0)).to_le_bytes()
                    })
                    .collect();
                a.copy_from_bytes(&scaled).unwrap();
            } else {
                a.copy_from_bytes(&bytes).unwrap();
            }
            a
        })
        .collect()
}

fn args(c: &[NDArray]) -> Vec<&dyn VmArg> {
    c.iter().map(|a| a as &dyn VmArg).collect()
}

fn bytes_of(outs: &[NDArray]) -> Vec<Vec<u8>> {
    outs.iter().map(|o| o.to_bytes().unwrap()).collect()
}

/// `call` on 6 variants from one thread, then from 8 threads at once: the same bytes.
fn concurrent_equals_serial<F>(cases: &[Vec<NDArray>], call: F)
where
    F: Fn(&[&dyn VmArg]) -> Vec<NDArray> + Sync,
{
    let expected: Vec<_> = cases.iter().map(|c| bytes_of(&call(&args(c)))).collect();
    assert_ne!(expected[0], expected[1], "the variants really differ");
    let mismatches: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (call, expected) = (&call, &expected);
                s.spawn(move || {
                    (0..ROUNDS)
                        .filter(|r| {
                            let k = (t + r) % cases.len();
                            bytes_of(&call(&args(&cases[k]))) != expected[k]
                        })
                        .count()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(mismatches, 0);
}

fn pool_size(runner: &Module) -> i64 {
    runner.function("pool_size").unwrap().invoke(()).unwrap()
}

#[test]
fn virtual_machine_eight_threads_equal_one_thread() {
    for name in ["digits", "two_outputs", "mlp_params"] {
        let dir = fixtures().join("tvm027/relax").join(name);
        let run = &read_json(dir.join("io.json"))["runs"][0];
        let lib = Module::load(
            fixtures()
                .join("tvm027/relax")
                .join(run["library"].as_str().unwrap()),
        )
        .unwrap();
        let vm = VirtualMachine::new(&lib, Device::cpu(0)).unwrap();
        let cases: Vec<_> = (0..6).map(|k| variant(&dir, &run["inputs"], k)).collect();
        let forward = vm.function("forward").unwrap();
        concurrent_equals_serial(&cases, |args| {
            forward.call(args).unwrap().into_tensors().unwrap()
        });
        let n = pool_size(vm.runner());
        assert!((1..=THREADS as i64).contains(&n), "{name}: pool of {n}");
    }
}

#[test]
fn graph_module_eight_threads_equal_one_thread() {
    for name in ["digits_b1", "multi_io_b1"] {
        let dir = fixtures().join("tvm018").join(name);
        let io = read_json(dir.join("io.json"));
        let gm = GraphModule::from_factory(
            &Module::load(dir.join("factory.so")).unwrap(),
            Device::cpu(0),
        )
        .unwrap();
        let names: Vec<String> = io["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(gm.input_names().unwrap(), names);
        let cases: Vec<_> = (0..6).map(|k| variant(&dir, &io["inputs"], k)).collect();
        concurrent_equals_serial(&cases, |args| gm.infer(args).unwrap());
        // By name: the same outputs.
        let named: Vec<(&str, &dyn VmArg)> = names
            .iter()
            .zip(&cases[0])
            .map(|(n, a)| (n.as_str(), a as &dyn VmArg))
            .collect();
        let args: Vec<&dyn VmArg> = cases[0].iter().map(|a| a as &dyn VmArg).collect();
        assert_eq!(
            bytes_of(&gm.infer_named(&named).unwrap()),
            bytes_of(&gm.infer(&args).unwrap())
        );
        let n = pool_size(&gm.runner().unwrap());
        assert!((1..=THREADS as i64).contains(&n), "{name}: pool of {n}");
    }
}

#[test]
fn graph_module_infer_errors_are_typed() {
    let dir = fixtures().join("tvm018/multi_io_b1");
    let lib = Module::load(dir.join("factory.so")).unwrap();
    let gm = GraphModule::from_factory(&lib, Device::cpu(0)).unwrap();
    let x = NDArray::empty(&[1, 8], DataType::FLOAT32, Device::cpu(0)).unwrap();
    let err = gm.infer(&[&x]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(err.to_string().contains("takes 3 inputs"), "{err}");
    let default = lib.function("default").unwrap();
    let bare = GraphModule::new(default.invoke::<Module>((Device::cpu(0),)).unwrap()).unwrap();
    let err = bare.infer(&[&x]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(err.to_string().contains("from_factory"), "{err}");
}

#[test]
fn runner_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<VirtualMachine>();
    check::<GraphModule>();
}

/// Every case submitted at once to the core's pool: each future resolves to what the
/// synchronous call returns for the same inputs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_infer_and_invoke_equal_the_synchronous_calls() {
    let dir = fixtures().join("tvm018/digits_b1");
    let io = read_json(dir.join("io.json"));
    let gm = GraphModule::from_factory(
        &Module::load(dir.join("factory.so")).unwrap(),
        Device::cpu(0),
    )
    .unwrap();
    let cases: Vec<_> = (0..6).map(|k| variant(&dir, &io["inputs"], k)).collect();
    let futures: Vec<_> = cases.iter().map(|c| gm.infer_async(c).unwrap()).collect();
    for (c, f) in cases.iter().zip(futures) {
        assert_eq!(
            bytes_of(&f.await.unwrap()),
            bytes_of(&gm.infer(&args(c)).unwrap())
        );
    }

    let dir = fixtures().join("tvm027/relax/two_outputs");
    let run = &read_json(dir.join("io.json"))["runs"][0];
    let lib = Module::load(
        fixtures()
            .join("tvm027/relax")
            .join(run["library"].as_str().unwrap()),
    )
    .unwrap();
    let vm = VirtualMachine::new(&lib, Device::cpu(0)).unwrap();
    let cases: Vec<_> = (0..6).map(|k| variant(&dir, &run["inputs"], k)).collect();
    let futures: Vec<_> = cases
        .iter()
        .map(|c| vm.invoke_async("forward", c).unwrap())
        .collect();
    for (c, f) in cases.iter().zip(futures) {
        let got = f.await.unwrap().into_tensors().unwrap();
        let want = vm
            .invoke("forward", &args(c))
            .unwrap()
            .into_tensors()
            .unwrap();
        assert_eq!(bytes_of(&got), bytes_of(&want));
    }
    let missing = vm.invoke_async("backward", &[]).err().unwrap();
    assert_eq!(missing.kind(), "AttributeError", "{missing}");
}
