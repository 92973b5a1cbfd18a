//! Soak of the Rust binding: closures made into runtime functions, called through the runtime
//! and dropped; global lookups; NDArray round trips (slice in, Vec out); runs of TVM 0.18's
//! digits model. Each phase runs POLYFFI_SOAK_CYCLES iterations (default 20,000: the CI run);
//! after a warm-up (the first fifth) the resident set may grow by at most POLYFFI_SOAK_BOUND_MIB
//! (default 4) over the rest, and the runtime's live objects (runtime.LiveObjectCount) must be
//! back at the end where they were after the warm-up. The long run:
//!   POLYFFI_SOAK_CYCLES=1000000 POLYFFI_SOAK_BOUND_MIB=8 \
//!     cargo test --release --test soak -- --nocapture
mod common;

use std::time::Instant;

use polyffi::{DataType, Device, Function, Module, NDArray, Value};

fn rss_kib() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(-1)
}

fn env_or(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Soak {
    cycles: usize,
    bound_kib: i64,
    live: Function,
    failures: Vec<String>,
}

impl Soak {
    fn live(&self) -> i64 {
        self.live.invoke(()).unwrap()
    }

    fn phase(&mut self, name: &str, mut body: impl FnMut(usize)) {
        let warm = self.cycles / 5;
        let t0 = Instant::now();
        for i in 0..warm {
            body(i);
        }
        let live_before = self.live();
        let before = rss_kib();
        for i in warm..self.cycles {
            body(i);
        }
        let after = rss_kib();
        let live_after = self.live();
        let ok = after - before <= self.bound_kib && live_after == live_before;
        println!(
            "{name:<44} {:>9}  {:7.2} s  RSS {before} KiB -> {after} KiB ({:+} KiB after warm-up), \
             live objects {live_before} -> {live_after} {}",
            self.cycles,
            t0.elapsed().as_secs_f64(),
            after - before,
            if ok { "ok" } else { "GROWS" }
        );
        if !ok {
            self.failures.push(name.to_string());
        }
    }
}

#[test]
fn soak_memory_and_live_objects_stay_flat() {
    common::testing();
    let mut soak = Soak {
        cycles: env_or("POLYFFI_SOAK_CYCLES", 20000.0) as usize,
        bound_kib: (env_or("POLYFFI_SOAK_BOUND_MIB", 4.0) * 1024.0) as i64,
        live: Function::global("runtime.LiveObjectCount").unwrap(),
        failures: Vec::new(),
    };
    let apply = common::global("testing.apply");

    soak.phase("closure from_typed/call through runtime/drop", |i| {
        let f = Function::from_typed(|x: i64| Ok(x * 2)).unwrap();
        let r: i64 = apply.invoke((&f, i as i64)).unwrap();
        assert_eq!(r, 2 * i as i64);
    });

    soak.phase("global lookup/call/drop (testing.add)", |i| {
        let f = Function::global("testing.add").unwrap();
        let r: i64 = f.invoke((i as i64, 1i64)).unwrap();
        assert_eq!(r, i as i64 + 1);
    });

    let src: Vec<f32> = (0..64).map(|k| k as f32).collect();
    soak.phase("NDArray round trip (slice in, Vec out)", |_| {
        let a = NDArray::from_slice(&src, &[64]).unwrap();
        let out: Vec<f32> = a.to_vec().unwrap();
        assert_eq!(out[63], 63.0);
    });

    let dir = common::repo_root().join("tests/tvm_models/tvm018/digits_b1");
    let factory = Module::load(dir.join("factory.so")).unwrap();
    let executor = match factory
        .function("default")
        .unwrap()
        .call(&[Value::Device(Device::cpu(0))])
        .unwrap()
    {
        Value::Module(m) => m,
        other => panic!("default() returned {}", other.type_name()),
    };
    let set_input = executor.function("set_input").unwrap();
    let run = executor.function("run").unwrap();
    let get_output = executor.function("get_output").unwrap();
    let input = std::fs::read(dir.join("input_data.bin")).unwrap();
    let x = NDArray::from_bytes(&input, &[1, 64], DataType::FLOAT32).unwrap();
    let expected = std::fs::read(dir.join("output_0.bin")).unwrap();
    soak.phase("model run (digits: set_input/run/get_output)", |i| {
        set_input
            .call(&[Value::Str("data".into()), Value::NDArray(x.clone())])
            .unwrap();
        run.call(&[]).unwrap();
        let y = match get_output.call(&[Value::Int(0)]).unwrap() {
            Value::NDArray(a) => a,
            other => panic!("get_output returned {}", other.type_name()),
        };
        if i == 0 {
            let got: Vec<f32> = y.to_vec().unwrap();
            for (k, g) in got.iter().enumerate() {
                let e = f32::from_le_bytes(expected[4 * k..4 * k + 4].try_into().unwrap());
                assert!(
                    (g - e).abs() <= 1e-5 * (1.0 + e.abs()),
                    "output {k}: {g} vs {e}"
                );
            }
        }
    });
    assert!(
        soak.failures.is_empty(),
        "phases that grew: {:?}",
        soak.failures
    );
}
