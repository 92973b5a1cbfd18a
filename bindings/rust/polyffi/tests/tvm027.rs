//! Models compiled by Apache TVM 0.27 (tests/tvm_models/tvm027) through the Rust binding.
//!
//! Kernel libraries (`__tvm_ffi_<name>` functions) are called as ordinary module functions,
//! relax VM executables run through `polyffi::VirtualMachine`. Every output must equal, byte for
//! byte, what TVM 0.27's own runtime computed, for inputs given as NDArrays, as 64-byte-aligned
//! `ndarray` views and slices (passed zero-copy) and as misaligned views (copied first); bad
//! calls give errors of the kinds TVM raised.
#![cfg(feature = "ndarray")]
mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use ndarray::{ArrayViewD, IxDyn};
use polyffi::{
    Allocator, DataType, Device, Function, Module, NDArray, Output, Value, VirtualMachine, VmArg,
};
use serde_json::Value as Json;

use common::{dtype_of, load_tensor, raw, read_json, shape_of};

fn fixtures() -> PathBuf {
    common::repo_root().join("tests/tvm_models/tvm027")
}

fn manifest() -> Json {
    read_json(&fixtures().join("manifest.json"))
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Host memory whose data starts `offset` bytes past a 64-byte boundary.
struct HostBuf {
    storage: Vec<u64>,
    start: usize,
    len: usize,
}

impl HostBuf {
    fn new(bytes: &[u8], offset: usize) -> HostBuf {
        let mut storage = vec![0u64; bytes.len() / 8 + 24];
        let base = storage.as_ptr() as usize;
        let start = (64 - base % 64) % 64 + offset;
        // SAFETY: start + len stays inside the storage (24 spare words = 192 bytes).
        unsafe {
            let p = (storage.as_mut_ptr() as *mut u8).add(start);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        }
        HostBuf {
            storage,
            start,
            len: bytes.len(),
        }
    }

    fn ptr(&self) -> *const u8 {
        // SAFETY: start is within the storage.
        unsafe { (self.storage.as_ptr() as *const u8).add(self.start) }
    }

    fn slice<T: polyffi::Element>(&self) -> &[T] {
        assert_eq!(self.ptr() as usize % std::mem::align_of::<T>(), 0);
        // SAFETY: len bytes of initialised data, aligned for T.
        unsafe {
            std::slice::from_raw_parts(self.ptr() as *const T, self.len / std::mem::size_of::<T>())
        }
    }

    fn view<T: polyffi::Element>(&self, shape: &[i64]) -> ArrayViewD<'_, T> {
        let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        ArrayViewD::from_shape(IxDyn(&dims), self.slice::<T>()).unwrap()
    }
}

fn assert_bytes(got: &NDArray, expected: &[u8], desc: &Json, what: &str) {
    assert_eq!(got.dtype(), dtype_of(desc), "{what}: dtype");
    assert_eq!(got.shape(), shape_of(desc).as_slice(), "{what}: shape");
    let bytes = got.to_bytes().unwrap();
    assert_eq!(bytes.len(), expected.len(), "{what}: size");
    if let Some(i) = bytes.iter().zip(expected).position(|(a, b)| a != b) {
        panic!(
            "{what}: differs from TVM's output at byte {i} of {}",
            expected.len()
        );
    }
}

// ---- kernels --------------------------------------------------------------------------------

fn kernels_dir() -> PathBuf {
    fixtures().join("kernels")
}

/// Registers the host global: dst = src + bias (float32) written in place, as TVM's callback did;
/// while `fail` is set it raises a KeyError instead. (The kernel resolves the global once and
/// keeps it, as TVM's generated code does, so its behaviour is switched, not its registration.)
fn register_add_bias(calls: Arc<Mutex<Vec<f64>>>, fail: Arc<AtomicBool>) {
    let name = manifest()["host_global"].as_str().unwrap().to_string();
    let add_bias = Function::from_typed(move |src: NDArray, mut dst: NDArray, bias: f64| {
        if fail.load(Ordering::SeqCst) {
            return Err(polyffi::Error::new("KeyError", "no bias today"));
        }
        calls.lock().unwrap().push(bias);
        let src = src.as_slice::<f32>()?.to_vec();
        let dst = dst.as_mut_slice::<f32>()?;
        if src.len() != dst.len() {
            return Err(polyffi::Error::new("ValueError", "add_bias: sizes differ"));
        }
        for (d, s) in dst.iter_mut().zip(&src) {
            *d = s + bias as f32;
        }
        Ok(())
    })
    .unwrap();
    add_bias.register_global(&name, true).unwrap();
}

/// A kernel case's arguments (tensors, then scalars in place) as Values, built by `tensor`.
fn kernel_args(case: &Json, mut tensor: impl FnMut(&Json) -> Value) -> Vec<Value> {
    case["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| {
            if arg.get("file").is_some() {
                tensor(arg)
            } else if let Some(x) = arg.get("float") {
                Value::Float(x.as_f64().unwrap())
            } else {
                Value::Int(arg["int"].as_i64().unwrap())
            }
        })
        .collect()
}

#[test]
fn kernels_match_tvm_with_arrays_and_aligned_views() {
    let dir = kernels_dir();
    let io = read_json(&dir.join("io.json"));
    let calls = Arc::new(Mutex::new(Vec::new()));
    let fail = Arc::new(AtomicBool::new(false));
    register_add_bias(calls.clone(), fail.clone());
    let cases = io["cases"].as_array().unwrap();
    let libraries: Vec<&str> = cases
        .iter()
        .map(|c| c["library"].as_str().unwrap())
        .collect();
    for k in manifest()["kernels"].as_array().unwrap() {
        let lib = format!("{}.so", k.as_str().unwrap());
        assert!(libraries.contains(&lib.as_str()), "no case for {lib}");
    }
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let lib = Module::load(dir.join(case["library"].as_str().unwrap())).unwrap();
        let f = lib.function(case["function"].as_str().unwrap()).unwrap();
        let out_desc = &case["output"];
        let expected = raw(&dir, out_desc);

        // NDArrays in, a zero-filled NDArray out.
        let mut args = kernel_args(case, |d| Value::NDArray(load_tensor(&dir, d)));
        let zeros = vec![0u8; expected.len()];
        let out = NDArray::from_bytes(&zeros, &shape_of(out_desc), dtype_of(out_desc)).unwrap();
        args.push(Value::NDArray(out.clone()));
        let ret = f.call(&args).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert!(ret.is_null(), "{name}: a kernel returns None, got {ret:?}");
        assert_bytes(&out, &expected, out_desc, name);

        // Aligned host memory in and out, as borrowed DLTensor views (zero-copy: the kernel
        // writes the caller's buffer).
        let bufs: Vec<(HostBuf, Json)> = case["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a.get("file").is_some())
            .map(|a| (HostBuf::new(&raw(&dir, a), 0), a.clone()))
            .collect();
        let out_buf = HostBuf::new(&zeros, 0);
        let mut views = bufs.iter();
        let view = |buf: &HostBuf, desc: &Json| -> Value {
            // SAFETY: from_borrowed copies the descriptor; buf outlives the call below.
            let mut shape = shape_of(desc);
            let t = polyffi::sys::DLTensor {
                data: buf.ptr() as *mut _,
                device: polyffi::sys::DLDevice {
                    device_type: 1,
                    device_id: 0,
                },
                ndim: shape.len() as i32,
                dtype: {
                    let dt = dtype_of(desc);
                    polyffi::sys::DLDataType {
                        code: dt.code,
                        bits: dt.bits,
                        lanes: dt.lanes,
                    }
                },
                shape: shape.as_mut_ptr(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            };
            Value::NDArray(unsafe { NDArray::from_borrowed(std::ptr::NonNull::from(&t)) })
        };
        let mut args = kernel_args(case, |_| {
            let (b, d) = views.next().unwrap();
            view(b, d)
        });
        args.push(view(&out_buf, out_desc));
        f.call(&args)
            .unwrap_or_else(|e| panic!("{name} (views): {e:?}"));
        assert_eq!(
            &out_buf.slice::<u8>()[..expected.len()],
            expected.as_slice(),
            "{name} (views): differs from TVM's output"
        );
    }
    let bias = io["host_bias"].as_f64().unwrap();
    let seen = calls.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![bias, bias],
        "callpacked calls the host global once per call"
    );

    // An error in the host global comes out of the kernel call with its kind and message.
    let name = manifest()["host_global"].as_str().unwrap().to_string();
    fail.store(true, Ordering::SeqCst);
    let lib = Module::load(dir.join("callpacked.so")).unwrap();
    let a = NDArray::from_slice(&[1f32; 64], &[64]).unwrap();
    let c = NDArray::from_slice(&[0f32; 64], &[64]).unwrap();
    let callpacked = lib.function("callpacked").unwrap();
    let err = callpacked.invoke::<()>((&a, &c)).unwrap_err();
    assert_eq!(err.kind(), "KeyError", "{err:?}");
    assert!(err.message().contains("no bias today"), "{err:?}");
    fail.store(false, Ordering::SeqCst);
    callpacked.invoke::<()>((&a, &c)).unwrap();
    assert_eq!(c.as_slice::<f32>().unwrap(), &[4.5f32; 64]);
    polyffi::remove_global(&name).unwrap();
}

#[test]
fn single_function_library_has_main_and_two_funcs_has_not() {
    let one = Module::load(kernels_dir().join("elementwise.so")).unwrap();
    assert!(one.get_function("main", false).unwrap().is_some());
    assert!(one.get_function("elementwise", false).unwrap().is_some());
    let two = Module::load(kernels_dir().join("two_funcs.so")).unwrap();
    assert!(two.get_function("scale", false).unwrap().is_some());
    assert!(two.get_function("shift", false).unwrap().is_some());
    assert!(two.get_function("main", false).unwrap().is_none());
    let err = two.function("main").unwrap_err();
    assert_eq!(err.kind(), "AttributeError");
}

#[test]
fn kernel_errors_match_tvm() {
    let dir = kernels_dir();
    let io = read_json(&dir.join("io.json"));
    let two = Module::load(dir.join("two_funcs.so")).unwrap();
    let scale = two.function("scale").unwrap();
    let shift = two.function("shift").unwrap();
    let x4 = NDArray::from_slice(&[0f32; 4], &[4]).unwrap();
    let i4 = NDArray::from_slice(&[0i32; 4], &[4]).unwrap();
    let errors = io["errors"].as_object().unwrap();
    assert_eq!(errors.len(), 6);
    for (key, tvm) in errors {
        let result: polyffi::Result<()> = match key.as_str() {
            "scale_arity" => scale.invoke((&x4, 2.0)),
            "scale_dtype" => {
                scale.invoke((&NDArray::from_slice(&[0f64; 4], &[4]).unwrap(), 2.0, &x4))
            }
            "scale_ndim" => {
                scale.invoke((&NDArray::from_slice(&[0f32; 4], &[2, 2]).unwrap(), 2.0, &x4))
            }
            "scale_shape" => {
                scale.invoke((&x4, 2.0, &NDArray::from_slice(&[0f32; 5], &[5]).unwrap()))
            }
            "shift_float_for_int" => shift.invoke((&i4, 1.5, &i4)),
            "scale_null_tensor" => scale.invoke(((), 2.0, &x4)),
            other => panic!("no call for the error case {other}"),
        };
        let err = result.expect_err(key);
        assert_eq!(err.kind(), tvm["kind"].as_str().unwrap(), "{key}: {err:?}");
        let text = format!("{err:?}");
        assert!(
            text.contains(tvm["message"].as_str().unwrap()),
            "{key}: {text:?} lacks TVM's message {:?}",
            tvm["message"]
        );
    }
    // Still computes after the rejected calls.
    let x = NDArray::from_slice(&[1f32, 2., 3., 4.], &[4]).unwrap();
    let y = NDArray::from_slice(&[0f32; 4], &[4]).unwrap();
    scale.invoke::<()>((&x, 2.5, &y)).unwrap();
    assert_eq!(y.as_slice::<f32>().unwrap(), &[2.5, 5., 7.5, 10.]);
}

#[test]
fn kernel_with_misaligned_views_is_safe() {
    let lib = Module::load(kernels_dir().join("elementwise.so")).unwrap();
    let f = lib.function("elementwise").unwrap();
    let a: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let b = vec![2f32; 1000];
    let expected: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y + 1.0).collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    for offset in [4usize, 8, 16, 32] {
        let (ab, bb) = (
            HostBuf::new(&bytes(&a), offset),
            HostBuf::new(&bytes(&b), offset),
        );
        let out = NDArray::empty(&[1000], DataType::FLOAT32, Device::cpu(0)).unwrap();
        match f.invoke::<()>((&ab.view::<f32>(&[1000]), &bb.view::<f32>(&[1000]), &out)) {
            Ok(()) => assert_eq!(
                out.as_slice::<f32>().unwrap(),
                expected.as_slice(),
                "offset {offset}"
            ),
            Err(e) => assert!(e.to_string().contains("align"), "offset {offset}: {e:?}"),
        }
    }
}

// ---- relax VM -------------------------------------------------------------------------------

fn relax_dir(model: &str) -> PathBuf {
    fixtures().join("relax").join(model)
}

fn model_io(model: &str) -> Json {
    read_json(&relax_dir(model).join("io.json"))
}

fn run_of(io: &Json, batch: i64) -> Json {
    io["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["batch"].as_i64() == Some(batch))
        .unwrap_or_else(|| panic!("no run at batch {batch}"))
        .clone()
}

fn load_vm(model: &str, run: &Json) -> (Module, VirtualMachine) {
    let lib = Module::load(
        relax_dir(model)
            .join("..")
            .join(run["library"].as_str().unwrap()),
    )
    .unwrap();
    let vm = VirtualMachine::new(&lib, Device::cpu(0)).unwrap();
    (lib, vm)
}

fn inputs(model: &str, run: &Json) -> Vec<(Vec<u8>, Json)> {
    run["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (raw(&relax_dir(model), d), d.clone()))
        .collect()
}

fn check_result(model: &str, run: &Json, result: Output, what: &str) {
    let io = model_io(model);
    let outputs = run["outputs"].as_array().unwrap();
    let got = if io["tuple_output"].as_bool().unwrap() {
        assert!(result.is_tuple(), "{model} {what}: expected a tuple");
        result.into_tensors().unwrap()
    } else {
        vec![result.into_tensor().unwrap()]
    };
    assert_eq!(got.len(), outputs.len(), "{model} {what}: outputs");
    for (i, (g, d)) in got.iter().zip(outputs).enumerate() {
        let what = format!("{model} b{} {what} output {i}", run["batch"]);
        assert_bytes(g, &raw(&relax_dir(model), d), d, &what);
    }
}

/// Every run of a model, with its inputs given in every form the binding takes.
fn relax_model_matches_tvm(model: &str) {
    let io = model_io(model);
    for run in io["runs"].as_array().unwrap() {
        let (lib, vm) = load_vm(model, run);
        assert_eq!(lib.type_key().unwrap(), "relax.VMExecutable");
        let imports: Vec<String> = lib
            .imports()
            .unwrap()
            .iter()
            .map(|m| m.type_key().unwrap())
            .collect();
        assert_eq!(imports, ["library"]);
        let ins = inputs(model, run);

        // NDArrays (allocated by the runtime: aligned, passed as they are).
        let arrays: Vec<NDArray> = ins
            .iter()
            .map(|(b, d)| NDArray::from_bytes(b, &shape_of(d), dtype_of(d)).unwrap())
            .collect();
        let args: Vec<&dyn VmArg> = arrays.iter().map(|a| a as &dyn VmArg).collect();
        check_result(model, run, vm.invoke("forward", &args).unwrap(), "NDArrays");

        // ndarray views: aligned (zero-copy) and misaligned by 4 and 16 bytes (copied).
        for offset in [0usize, 4, 16] {
            let bufs: Vec<HostBuf> = ins.iter().map(|(b, _)| HostBuf::new(b, offset)).collect();
            let views: Vec<ArrayViewD<f32>> = bufs
                .iter()
                .zip(&ins)
                .map(|(b, (_, d))| b.view::<f32>(&shape_of(d)))
                .collect();
            let args: Vec<&dyn VmArg> = views.iter().map(|v| v as &dyn VmArg).collect();
            let forward = vm.function("forward").unwrap();
            check_result(
                model,
                run,
                forward.call(&args).unwrap(),
                &format!("views at +{offset}"),
            );
        }

        // Slices with their shapes, and owned ndarray arrays.
        let bufs: Vec<HostBuf> = ins.iter().map(|(b, _)| HostBuf::new(b, 0)).collect();
        let shapes: Vec<Vec<i64>> = ins.iter().map(|(_, d)| shape_of(d)).collect();
        let slices: Vec<(&[f32], &[i64])> = bufs
            .iter()
            .zip(&shapes)
            .map(|(b, s)| (b.slice::<f32>(), s.as_slice()))
            .collect();
        let args: Vec<&dyn VmArg> = slices.iter().map(|s| s as &dyn VmArg).collect();
        check_result(model, run, vm.invoke("forward", &args).unwrap(), "slices");
        let owned: Vec<ndarray::ArrayD<f32>> = ins
            .iter()
            .map(|(b, d)| {
                let dims: Vec<usize> = shape_of(d).iter().map(|&x| x as usize).collect();
                ndarray::ArrayD::from_shape_vec(IxDyn(&dims), f32s(b)).unwrap()
            })
            .collect();
        let args: Vec<&dyn VmArg> = owned.iter().map(|a| a as &dyn VmArg).collect();
        check_result(
            model,
            run,
            vm.invoke("forward", &args).unwrap(),
            "ndarray arrays",
        );
    }
}

macro_rules! relax_models {
    ($($name:ident),* $(,)?) => {
        const MODELS: &[&str] = &[$(stringify!($name)),*];
        mod matches_tvm {
            $( #[test] fn $name() { super::relax_model_matches_tvm(stringify!($name)); } )*
        }
        mod results_stay_valid {
            $( #[test] fn $name() { super::results_stay_valid_after_the_next_call(stringify!($name)); } )*
        }
        mod stateful_api {
            $( #[test] fn $name() { super::stateful_api(stringify!($name)); } )*
        }
        mod bad_input {
            $( #[test] fn $name() { super::bad_input_is_a_clear_error(stringify!($name)); } )*
        }
    };
}

relax_models!(mlp_params, mlp_const, conv, two_outputs, dyn_batch, digits);

#[test]
fn every_relax_fixture_is_covered() {
    let m = manifest();
    assert!(m["tvm_version"].as_str().unwrap().starts_with("0.27"));
    let mut listed: Vec<&str> = m["relax"]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    listed.sort_unstable();
    let mut covered = MODELS.to_vec();
    covered.sort_unstable();
    assert_eq!(listed, covered);
}

fn results_stay_valid_after_the_next_call(model: &str) {
    let io = model_io(model);
    let run = &io["runs"][0];
    let (_lib, vm) = load_vm(model, run);
    let ins = inputs(model, run);
    let arrays: Vec<NDArray> = ins
        .iter()
        .map(|(b, d)| NDArray::from_bytes(b, &shape_of(d), dtype_of(d)).unwrap())
        .collect();
    let args: Vec<&dyn VmArg> = arrays.iter().map(|a| a as &dyn VmArg).collect();
    let first = vm.invoke("forward", &args).unwrap();
    let halves: Vec<NDArray> = ins
        .iter()
        .map(|(b, d)| NDArray::from_slice(&vec![0.5f32; b.len() / 4], &shape_of(d)).unwrap())
        .collect();
    let args: Vec<&dyn VmArg> = halves.iter().map(|a| a as &dyn VmArg).collect();
    for _ in 0..3 {
        let other = vm.invoke("forward", &args).unwrap();
        drop(other);
    }
    check_result(model, run, first, "first result after three more calls");
}

fn stateful_api(model: &str) {
    let io = model_io(model);
    let run = io["runs"].as_array().unwrap().last().unwrap().clone();
    let (_lib, vm) = load_vm(model, &run);
    let names: Vec<String> = io["param_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    assert_eq!(vm.param_names("forward").unwrap(), names);
    let bufs: Vec<HostBuf> = inputs(model, &run)
        .iter()
        .map(|(b, _)| HostBuf::new(b, 4))
        .collect();
    let views: Vec<ArrayViewD<f32>> = bufs
        .iter()
        .zip(run["inputs"].as_array().unwrap())
        .map(|(b, d)| b.view::<f32>(&shape_of(d)))
        .collect();
    let args: Vec<&dyn VmArg> = views.iter().map(|v| v as &dyn VmArg).collect();
    vm.set_input("forward", &args).unwrap();
    vm.invoke_stateful("forward").unwrap();
    check_result(model, &run, vm.get_outputs("forward").unwrap(), "stateful");
}

fn bad_input_is_a_clear_error(model: &str) {
    let io = model_io(model);
    let run = &io["runs"][0];
    let (_lib, vm) = load_vm(model, run);
    let ins = inputs(model, run);
    let good: Vec<NDArray> = ins
        .iter()
        .map(|(b, d)| NDArray::from_bytes(b, &shape_of(d), dtype_of(d)).unwrap())
        .collect();
    let param = io["param_names"][0].as_str().unwrap();
    let shape0 = shape_of(&ins[0].1);
    for error in ["wrong_shape", "wrong_dtype"] {
        let tvm = &io["errors"][error];
        let bad = if error == "wrong_shape" {
            let mut s = shape0.clone();
            for d in s.iter_mut().skip(1) {
                *d += 1;
            }
            let n: i64 = s.iter().product();
            NDArray::from_slice(&vec![0f32; n as usize], &s).unwrap()
        } else {
            let doubles: Vec<f64> = f32s(&ins[0].0).iter().map(|&x| x as f64).collect();
            NDArray::from_slice(&doubles, &shape0).unwrap()
        };
        let mut args: Vec<&dyn VmArg> = good.iter().map(|a| a as &dyn VmArg).collect();
        args[0] = &bad;
        let err = vm.invoke("forward", &args).unwrap_err();
        let text = format!("{err:?}");
        assert_eq!(
            err.kind(),
            tvm["kind"].as_str().unwrap(),
            "{model} {error}: {text}"
        );
        assert!(
            text.contains(&format!("param={param}")),
            "{model} {error}: {text}"
        );
        if error == "wrong_dtype" {
            assert!(
                text.contains("float64") && text.contains("float32"),
                "{text}"
            );
        } else {
            assert!(text.contains("shape"), "{text}");
        }
        // The VM is still usable afterwards.
        let args: Vec<&dyn VmArg> = good.iter().map(|a| a as &dyn VmArg).collect();
        check_result(
            model,
            run,
            vm.invoke("forward", &args).unwrap(),
            &format!("after {error}"),
        );
    }
    // Too few and too many arguments.
    let n = io["param_names"].as_array().unwrap().len();
    let args: Vec<&dyn VmArg> = good.iter().map(|a| a as &dyn VmArg).collect();
    let err = vm.invoke("forward", &args[..n - 1]).unwrap_err();
    assert!(
        format!("{err:?}").contains(&format!("expects {n} arguments")),
        "{err:?}"
    );
    let mut more = args.clone();
    more.push(&good[0]);
    vm.invoke("forward", &more).unwrap_err();
    // A missing function is an AttributeError naming it.
    let err = vm.invoke("backward", &args).unwrap_err();
    assert_eq!(err.kind(), "AttributeError");
    assert!(err.message().contains("no function 'backward'"), "{err}");
    assert!(vm.has_function("forward").unwrap());
    assert!(!vm.has_function("backward").unwrap());
}

#[test]
fn dynamic_batch_runs_every_batch_size_on_one_vm() {
    let io = model_io("dyn_batch");
    let (_lib, vm) = load_vm("dyn_batch", &io["runs"][0]);
    let mut kept = Vec::new();
    for batch in [1i64, 7, 64, 7, 1] {
        let run = run_of(&io, batch);
        let ins = inputs("dyn_batch", &run);
        let x = NDArray::from_bytes(&ins[0].0, &shape_of(&ins[0].1), DataType::FLOAT32).unwrap();
        let out = vm.invoke("forward", &[&x]).unwrap();
        kept.push((run, out.clone()));
        check_result("dyn_batch", &kept.last().unwrap().0, out, "dynamic batch");
    }
    // Every earlier result still holds its own values.
    for (run, out) in kept {
        check_result("dyn_batch", &run, out, "kept");
    }
}

#[test]
fn one_vm_shared_by_threads_gives_every_thread_tvms_outputs() {
    fn check<T: Send + Sync>() {}
    check::<VirtualMachine>();
    let io = model_io("dyn_batch");
    let (_lib, vm) = load_vm("dyn_batch", &io["runs"][0]);
    let vm = Arc::new(vm);
    let threads: Vec<_> = [1i64, 7, 64, 7]
        .into_iter()
        .map(|batch| {
            let vm = vm.clone();
            let run = run_of(&io, batch);
            std::thread::spawn(move || {
                let ins = inputs("dyn_batch", &run);
                let x = NDArray::from_bytes(&ins[0].0, &shape_of(&ins[0].1), DataType::FLOAT32)
                    .unwrap();
                for _ in 0..20 {
                    let out = vm.invoke("forward", &[&x]).unwrap();
                    check_result("dyn_batch", &run, out, "shared across threads");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn naive_allocator_gives_the_same_outputs() {
    let io = model_io("conv");
    let run = run_of(&io, 16);
    let lib = Module::load(
        relax_dir("conv")
            .join("..")
            .join(run["library"].as_str().unwrap()),
    )
    .unwrap();
    let vm = VirtualMachine::with_allocator(&lib, Device::cpu(0), Allocator::Naive).unwrap();
    let ins = inputs("conv", &run);
    let x = NDArray::from_bytes(&ins[0].0, &shape_of(&ins[0].1), DataType::FLOAT32).unwrap();
    check_result(
        "conv",
        &run,
        vm.invoke("forward", &[&x]).unwrap(),
        "naive allocator",
    );
}

#[test]
fn executable_kernels_are_reachable_through_the_imports() {
    let lib = Module::load(fixtures().join("relax/two_outputs.so")).unwrap();
    let kernels = lib.imports().unwrap().remove(0);
    let a: Vec<f32> = (0..8).map(|i| i as f32).collect();
    let x = NDArray::from_slice(&a, &[1, 8]).unwrap();
    let y = NDArray::from_slice(&[1f32; 8], &[1, 8]).unwrap();
    let out = NDArray::empty(&[1, 8], DataType::FLOAT32, Device::cpu(0)).unwrap();
    kernels
        .function("add")
        .unwrap()
        .invoke::<()>((&x, &y, &out))
        .unwrap();
    let want: Vec<f32> = a.iter().map(|v| v + 1.0).collect();
    assert_eq!(out.as_slice::<f32>().unwrap(), want.as_slice());
}

#[test]
fn virtual_machine_rejects_what_is_not_an_executable() {
    let kernels = Module::load(kernels_dir().join("elementwise.so")).unwrap();
    let err = VirtualMachine::new(&kernels, Device::cpu(0)).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(err.message().contains("not a relax VM executable"), "{err}");
    let factory = common::repo_root().join("tests/tvm_models/tvm018/digits_b1/factory.so");
    let err = VirtualMachine::new(&Module::load(factory).unwrap(), Device::cpu(0)).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(err.message().contains("GraphModule"), "{err}");
    // A slice whose length does not fit its shape.
    let lib = Module::load(fixtures().join("relax/mlp_const.so")).unwrap();
    let vm = VirtualMachine::new(&lib, Device::cpu(0)).unwrap();
    let data = [0f32; 15];
    let shape = [1i64, 16];
    let err = vm
        .invoke("forward", &[&(&data[..], &shape[..])])
        .unwrap_err();
    assert_eq!(err.kind(), "ValueError");
    assert!(err.message().contains("16 elements"), "{err}");
    // A scalar where a tensor goes: the VM's TypeError, and the VM still works.
    let err = vm.invoke("forward", &[&1.5f64]).unwrap_err();
    assert!(!err.message().is_empty());
    let x = NDArray::from_slice(&[0f32; 16], &[1, 16]).unwrap();
    assert_eq!(
        vm.invoke("forward", &[&x])
            .unwrap()
            .into_tensor()
            .unwrap()
            .shape(),
        &[1, 10]
    );
    // A tensor result is not a tuple.
    let err = vm
        .invoke("forward", &[&x])
        .unwrap()
        .into_tuple()
        .unwrap_err();
    assert_eq!(err.kind(), "TypeError");
}

#[test]
fn digits_relax_export_classifies_like_the_training_script() {
    let model = common::repo_root().join("examples/digits/model");
    let expected = read_json(&model.join("expected.json"));
    let want: Vec<usize> = expected["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap() as usize)
        .collect();
    let x = f32s(&std::fs::read(model.join("test_x.bin")).unwrap());
    let rows = want.len();
    assert_eq!(x.len(), rows * 64);
    let lib = Module::load(fixtures().join("relax/digits.so")).unwrap();
    let vm = VirtualMachine::new(&lib, Device::cpu(0)).unwrap();
    let view = ndarray::ArrayView2::from_shape((rows, 64), &x).unwrap();
    let probs = vm
        .invoke("forward", &[&view])
        .unwrap()
        .into_tensor()
        .unwrap();
    assert_eq!(probs.shape(), &[rows as i64, 10]);
    let argmax = |row: &[f32]| {
        row.iter()
            .enumerate()
            .fold(0, |best, (i, &p)| if p > row[best] { i } else { best })
    };
    let got: Vec<usize> = probs
        .as_slice::<f32>()
        .unwrap()
        .chunks_exact(10)
        .map(argmax)
        .collect();
    assert_eq!(got, want);
    for i in (0..rows).step_by(37) {
        let one = (&x[i * 64..(i + 1) * 64], &[1i64, 64][..]);
        let p = vm
            .invoke("forward", &[&one])
            .unwrap()
            .into_tensor()
            .unwrap();
        assert_eq!(argmax(p.as_slice::<f32>().unwrap()), want[i], "digit {i}");
    }
}
