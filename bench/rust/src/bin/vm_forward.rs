//! Latency of a TVM 0.27 relax model's `forward` through `polyffi::VirtualMachine` (the Rust
//! binding), for the three ways inputs arrive: runtime NDArrays (passed as they are), 64-byte
//! aligned host slices (zero-copy views) and misaligned host slices (copied into aligned arrays
//! per call). bench/models/vm_bindings.sh runs it beside the C driver (vm_bench_polyffi) and the
//! Node and Java ones, same model and batch, and prints the ratios.
//!
//! usage: vm-forward RUN_DIR IO_TXT [min_ms]   (RUN_DIR: tests/tvm_models/tvm027/relax/<model>)
//! Prints one JSON line: median ns per forward (result dropped) of 9 timed batches.
use std::path::Path;
use std::time::Instant;

use polyffi::{DataType, Device, Module, NDArray, VirtualMachine, VmArg};

struct Input {
    shape: Vec<i64>,
    bytes: Vec<u8>,
}

/// `b<B>_io.txt`: `library F`, `input NAME CODE BITS NDIM DIMS... FILE`, `output I BYTES FILE`.
fn parse(dir: &Path, io: &str) -> (String, Vec<Input>, Vec<Vec<u8>>) {
    let text = std::fs::read_to_string(dir.join(io)).expect("io.txt");
    let (mut lib, mut ins, mut outs) = (String::new(), Vec::new(), Vec::new());
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.first() {
            Some(&"library") => lib = w[1].to_string(),
            Some(&"input") => {
                assert_eq!((w[2], w[3]), ("2", "32"), "float32 inputs only");
                let ndim: usize = w[4].parse().unwrap();
                let shape = w[5..5 + ndim].iter().map(|d| d.parse().unwrap()).collect();
                let bytes = std::fs::read(dir.join(w[5 + ndim])).unwrap();
                ins.push(Input { shape, bytes });
            }
            Some(&"output") => outs.push(std::fs::read(dir.join(w[3])).unwrap()),
            _ => {}
        }
    }
    (lib, ins, outs)
}

fn median_ns(min_ms: f64, mut f: impl FnMut()) -> f64 {
    let mut iters = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        let dt = t.elapsed().as_secs_f64() * 1e9;
        if dt > min_ms * 1e6 / 4.0 {
            iters = (iters as f64 * (min_ms * 1e6 / dt)) as u64 + 1;
            break;
        }
        iters *= 4;
    }
    let mut per: Vec<f64> = (0..9)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_secs_f64() * 1e9 / iters as f64
        })
        .collect();
    per.sort_by(|a, b| a.partial_cmp(b).unwrap());
    per[4]
}

/// f32 storage holding `bytes` at `offset` bytes past a 64-byte boundary.
fn host(bytes: &[u8], offset: usize) -> (Vec<f32>, usize) {
    let mut v = vec![0f32; bytes.len() / 4 + 32];
    let skip = ((64 - v.as_ptr() as usize % 64) % 64 + offset) / 4;
    for (i, c) in bytes.chunks_exact(4).enumerate() {
        v[skip + i] = f32::from_le_bytes(c.try_into().unwrap());
    }
    (v, skip)
}

fn main() -> polyffi::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let dir = Path::new(&args[1]);
    let min_ms: f64 = args.get(3).map_or(200.0, |s| s.parse().unwrap());
    let (lib, ins, outs) = parse(dir, &args[2]);
    let lib = Module::load(dir.join("..").join(&lib))?;
    let vm = VirtualMachine::new(&lib, Device::cpu(0))?;
    let forward = vm.function("forward")?;

    let arrays: Vec<NDArray> = ins
        .iter()
        .map(|i| NDArray::from_bytes(&i.bytes, &i.shape, DataType::FLOAT32))
        .collect::<polyffi::Result<_>>()?;
    let hosts: Vec<[(Vec<f32>, usize); 2]> = ins
        .iter()
        .map(|i| [host(&i.bytes, 0), host(&i.bytes, 4)])
        .collect();
    let slices = |k: usize| -> Vec<(&[f32], &[i64])> {
        hosts
            .iter()
            .zip(&ins)
            .map(|(h, i)| {
                let (v, skip) = &h[k];
                (&v[*skip..*skip + i.bytes.len() / 4], i.shape.as_slice())
            })
            .collect()
    };
    let (aligned, misaligned) = (slices(0), slices(1));
    fn as_args<'a>(xs: &'a [(&'a [f32], &'a [i64])]) -> Vec<&'a dyn VmArg> {
        xs.iter().map(|x| x as &dyn VmArg).collect()
    }
    let forms: [(&str, Vec<&dyn VmArg>); 3] = [
        (
            "ndarray_ns",
            arrays.iter().map(|a| a as &dyn VmArg).collect(),
        ),
        ("aligned_view_ns", as_args(&aligned)),
        ("misaligned_view_ns", as_args(&misaligned)),
    ];
    let mut row = vec!["\"binding\": \"rust\"".to_string()];
    for (name, a) in &forms {
        // Check once: every form gives TVM's bytes.
        let got = forward.call(a)?.into_tensors()?;
        for (g, want) in got.iter().zip(&outs) {
            assert_eq!(&g.to_bytes()?, want, "{name}: output differs from TVM's");
        }
        for _ in 0..200 {
            drop(forward.call(a)?);
        }
        let ns = median_ns(min_ms, || drop(forward.call(a).unwrap()));
        row.push(format!("\"{name}\": {ns:.1}"));
    }
    println!("{{{}}}", row.join(", "));
    Ok(())
}
