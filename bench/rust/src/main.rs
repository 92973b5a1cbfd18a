//! Call overhead of the Rust binding, side by side in one run with
//!   - the floor: a direct `extern "C"` call into libbench_baseline.so (same signature),
//!   - the C ABI called from C: build/bin/bench_calls' polyffi_c rows (run as a subprocess),
//!   - apache tvm-ffi's own Rust crate doing the same work (the tvm-ffi-rows binary, when built
//!     with `--features tvm-ffi`).
//!
//! It prints CPU ns/call (median of 7 repetitions), Rust heap allocations per call, and ratios.
//!
//! ```text
//! polyffi-bench                              the table
//! polyffi-bench --soak                       10M calls + 1M closure create/drop, RSS along the way
//! polyffi-bench --case NAME --iterations N   run one case untimed (for callgrind)
//! ```
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;

use polyffi::{Function, Module, Value};
use polyffi_bench::{measure, rss_kib, CountingAlloc, CALL_N, STR16};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

#[cfg(has_baseline)]
extern "C" {
    fn bench_baseline_nop();
    fn bench_baseline_add3(a: i64, b: i64, c: i64) -> i64;
}

fn lib_dir() -> PathBuf {
    std::env::var_os("POLYFFI_LIB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(option_env!("POLYFFI_BENCH_LIB_DIR").unwrap_or("build/lib"))
        })
}

struct Handles {
    nop: Function,
    add3: Function,
    echo: Function,
    call_n: Function,
    add_one: Function,
    add_one_typed: Function,
    /// The reused result buffer of `str16/rust_into`.
    text: std::cell::RefCell<String>,
}

fn handles() -> Handles {
    let testing = lib_dir().join("libpolyffi_testing.so");
    Module::load(&testing).unwrap_or_else(|e| panic!("{}: {e}", testing.display()));
    let g = |n: &str| Function::global(n).unwrap();
    let add_one = Function::from_closure(|args: &[Value]| match args {
        [Value::Int(x)] => Ok(Value::Int(x + 1)),
        _ => Err(polyffi::Error::new("TypeError", "add_one expects one int")),
    })
    .unwrap();
    let add_one_typed = Function::from_typed(|x: i64| Ok(x + 1)).unwrap();
    let h = Handles {
        add_one_typed,
        text: std::cell::RefCell::new(String::new()),
        nop: g("testing.nop"),
        add3: g("testing.add3"),
        echo: g("testing.echo"),
        call_n: g("testing.call_n"),
        add_one,
    };
    assert_eq!(h.add3.invoke::<i64>((1, 2, 3)).unwrap(), 6);
    assert_eq!(h.echo.invoke::<String>((STR16,)).unwrap(), STR16);
    assert!(h.echo.invoke_with_str((STR16,), |s| s == STR16).unwrap());
    assert_eq!(
        h.call_n.invoke::<i64>((&h.add_one, 4)).unwrap(),
        1 + 2 + 3 + 4
    );
    h
}

/// One body per case name, for the timed table and for `--case` (callgrind).
fn run_case(h: &Handles, name: &str, n: u64) -> bool {
    match name {
        "nop/rust_typed" => (0..n).for_each(|_| h.nop.invoke::<()>(()).unwrap()),
        "add3/rust_typed" => (0..n).for_each(|_| {
            black_box(h.add3.invoke::<i64>((black_box(1i64), 2i64, 3i64)).unwrap());
        }),
        "add3/rust_generic" => (0..n).for_each(|_| {
            let args = [Value::Int(black_box(1)), Value::Int(2), Value::Int(3)];
            black_box(h.add3.call(&args).unwrap());
        }),
        // What the tvm-ffi crate's add3 row does: typed arguments, the generic result (its
        // `Any`, our `Value`), then the conversion to i64.
        "add3/rust_value" => (0..n).for_each(|_| {
            let r: Value = h.add3.invoke((black_box(1i64), 2i64, 3i64)).unwrap();
            black_box(i64::try_from(r).unwrap());
        }),
        "str16/rust_typed" => (0..n).for_each(|_| {
            black_box(h.echo.invoke::<String>((black_box(STR16),)).unwrap());
        }),
        "str16/rust_into" => {
            let mut text = h.text.borrow_mut();
            (0..n).for_each(|_| {
                h.echo
                    .invoke_into_string((black_box(STR16),), &mut text)
                    .unwrap();
                black_box(text.as_str());
            });
            assert!(n == 0 || *text == STR16);
        }
        // The result lent as a &str for the closure's body (no copy), as the peer's row gets
        // its refcounted string back without copying it.
        "str16/rust_borrowed" => (0..n).for_each(|_| {
            h.echo
                .invoke_with_str((black_box(STR16),), |s| {
                    black_box(s);
                })
                .unwrap();
        }),
        "callback/rust_typed" => (0..n).for_each(|_| {
            black_box(h.call_n.invoke::<i64>((&h.add_one, CALL_N)).unwrap());
        }),
        "callback/rust_from_typed" => (0..n).for_each(|_| {
            black_box(h.call_n.invoke::<i64>((&h.add_one_typed, CALL_N)).unwrap());
        }),
        "lookup/rust_typed" => (0..n).for_each(|_| {
            black_box(Function::get_global("testing.add3").unwrap());
        }),
        // Dtype spelling through the core's globals (looked up once): parse and print.
        "dtype/parse" => (0..n).for_each(|_| {
            black_box(polyffi::DataType::parse(black_box("float32")).unwrap());
        }),
        "dtype/display" => (0..n).for_each(|_| {
            black_box(black_box(polyffi::DataType::FLOAT32).to_string());
        }),
        #[cfg(has_baseline)]
        "nop/floor" => (0..n).for_each(|_| unsafe { bench_baseline_nop() }),
        #[cfg(has_baseline)]
        "add3/floor" => (0..n).for_each(|_| unsafe {
            black_box(bench_baseline_add3(black_box(1), 2, 3));
        }),
        _ => return false,
    }
    true
}

const CASES: &[(&str, u64, u64)] = &[
    // (name, bodies per repetition, calls per body)
    ("nop/floor", 5_000_000, 1),
    ("add3/floor", 5_000_000, 1),
    ("nop/rust_typed", 2_000_000, 1),
    ("add3/rust_typed", 2_000_000, 1),
    ("add3/rust_generic", 2_000_000, 1),
    ("add3/rust_value", 2_000_000, 1),
    ("str16/rust_typed", 1_000_000, 1),
    ("str16/rust_into", 1_000_000, 1),
    ("str16/rust_borrowed", 1_000_000, 1),
    ("callback/rust_typed", 3, CALL_N as u64),
    ("callback/rust_from_typed", 3, CALL_N as u64),
    ("lookup/rust_typed", 1_000_000, 1),
];

/// The polyffi_c rows of bench_calls (Google Benchmark, 7 repetitions, median CPU time).
fn c_rows(build: &Path) -> BTreeMap<String, f64> {
    let binary = build.join("bin/bench_calls");
    let mut rows = BTreeMap::new();
    if !binary.exists() {
        eprintln!("({} not found: no C rows)", binary.display());
        return rows;
    }
    let out = std::env::temp_dir().join(format!("polyffi-bench-c-{}.json", std::process::id()));
    let status = Command::new(&binary)
        .args([
            "--benchmark_filter=(polyffi_c|tvm_ffi)",
            "--benchmark_repetitions=7",
            "--benchmark_min_time=0.2",
            "--benchmark_display_aggregates_only=true",
            "--benchmark_out_format=json",
        ])
        .arg(format!("--benchmark_out={}", out.display()))
        .stdout(std::process::Stdio::null())
        .status();
    if !matches!(status, Ok(s) if s.success()) {
        eprintln!("(bench_calls failed: {status:?})");
        return rows;
    }
    // Google Benchmark writes counters that are not numbers as bare nan / inf.
    let text = std::fs::read_to_string(&out).unwrap();
    let text = [
        ": -nan",
        ": nan",
        ": NaN",
        ": -inf",
        ": inf",
        ": Infinity",
        ": -Infinity",
    ]
    .iter()
    .fold(text, |t, bad| t.replace(bad, ": null"));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let _ = std::fs::remove_file(&out);
    for b in json["benchmarks"].as_array().unwrap() {
        if b["aggregate_name"] != "median" {
            continue;
        }
        let name = b["run_name"].as_str().unwrap_or_default();
        let parts: Vec<&str> = name.split('/').collect();
        if parts.len() != 3 {
            continue;
        }
        let mut ns = b["cpu_time"].as_f64().unwrap_or(f64::NAN);
        let case = match parts[1] {
            "callback_call_n" => {
                ns /= 1000.0; // kCallN callbacks per iteration (bench/calls/common_inputs.h)
                "callback"
            }
            "callback" => "callback_direct",
            other => other,
        };
        rows.insert(format!("{case}/{}", parts[2]), ns);
    }
    rows
}

/// Rows of the tvm-ffi crate, from the tvm-ffi-rows binary next to this one.
fn tvm_ffi_rows(build: &Path) -> (BTreeMap<String, (f64, f64)>, String) {
    let mut rows = BTreeMap::new();
    let me = std::env::current_exe().unwrap();
    let binary = me.with_file_name("tvm-ffi-rows");
    let fixtures = build.join("lib/libbench_tvm_ffi_fixtures.so");
    if !binary.exists() {
        return (rows, "not built (cargo build --features tvm-ffi)".into());
    }
    if !fixtures.exists() {
        return (rows, format!("{} missing", fixtures.display()));
    }
    let out = match Command::new(&binary).arg(&fixtures).output() {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            return (
                rows,
                format!("failed: {}", String::from_utf8_lossy(&o.stderr)),
            )
        }
        Err(e) => return (rows, format!("cannot run: {e}")),
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Ok(j) = serde_json::from_str::<serde_json::Value>(line) {
            rows.insert(
                j["case"].as_str().unwrap_or("?").to_string(),
                (
                    j["ns"].as_f64().unwrap_or(f64::NAN),
                    j["allocs"].as_f64().unwrap_or(f64::NAN),
                ),
            );
        }
    }
    (rows, "ok".into())
}

fn ratio(a: f64, b: Option<f64>) -> String {
    match b {
        Some(b) if b > 0.0 && b.is_finite() => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
}

fn table(h: &Handles) {
    let build = lib_dir().join("..");
    let mut ours: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for &(name, iters, per) in CASES {
        let mut available = true;
        let (ns, allocs) = measure(iters, per, || {
            available = run_case(h, name, 1);
        });
        if available {
            ours.insert(name, (ns, allocs));
        }
    }
    let c = c_rows(&build);
    let (tvm, tvm_status) = tvm_ffi_rows(&build);
    if tvm_status != "ok" {
        // The comparison is the point of the table: no peer, no table.
        eprintln!("polyffi-bench: the tvm-ffi crate rows are missing: {tvm_status}");
        std::process::exit(1);
    }

    println!("| case | polyffi Rust ns/call | allocs/call | floor (extern \"C\") | C ABI from C | tvm-ffi crate | Rust / C ABI | Rust / tvm-ffi crate |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let fmt = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.2}"));
    for (case, ours_name) in [
        ("nop", "nop/rust_typed"),
        ("add3 (typed invoke)", "add3/rust_typed"),
        ("add3 (generic call)", "add3/rust_generic"),
        ("add3 (typed args, `Value` result)", "add3/rust_value"),
        ("str16 echo -> `String`", "str16/rust_typed"),
        ("str16 echo into a reused `String`", "str16/rust_into"),
        ("str16 echo lent as `&str`", "str16/rust_borrowed"),
        (
            "closure `from_closure` via call_n (per callback)",
            "callback/rust_typed",
        ),
        (
            "closure `from_typed` via call_n (per callback)",
            "callback/rust_from_typed",
        ),
        ("global lookup", "lookup/rust_typed"),
    ] {
        let key = ours_name.split('/').next().unwrap();
        let Some(&(ns, allocs)) = ours.get(ours_name) else {
            continue;
        };
        let floor = ours.get(format!("{key}/floor").as_str()).map(|r| r.0);
        let c_abi = c.get(&format!("{key}/polyffi_c")).copied();
        let peer = tvm.get(key).map(|r| r.0);
        println!(
            "| {case} | {ns:.2} | {allocs:.2} | {} | {} | {} | {} | {} |",
            fmt(floor),
            fmt(c_abi),
            fmt(peer),
            ratio(ns, c_abi),
            ratio(ns, peer)
        );
    }
    println!();
    println!("tvm-ffi crate rows: {tvm_status}");
    for (case, (ns, allocs)) in &tvm {
        println!("  tvm-ffi crate {case}: {ns:.2} ns/call, {allocs:.2} allocs/call");
    }
    let others: Vec<String> = c
        .iter()
        .filter(|(k, _)| k.contains("tvm_ffi"))
        .map(|(k, v)| format!("{k} {v:.2}"))
        .collect();
    if !others.is_empty() {
        println!(
            "bench_calls tvm-ffi C++ rows (ns/call): {}",
            others.join(", ")
        );
    }
}

fn soak(h: &Handles) {
    let start = rss_kib();
    println!("soak: RSS at start {start} KiB");
    let mut checkpoints = Vec::new();
    for chunk in 1..=10 {
        for _ in 0..1_000_000 {
            black_box(h.add3.invoke::<i64>((black_box(1i64), 2i64, 3i64)).unwrap());
        }
        checkpoints.push(rss_kib());
        if chunk % 5 == 0 {
            println!("  after {chunk}M add3 calls: RSS {} KiB", rss_kib());
        }
    }
    let after_calls = rss_kib();
    for chunk in 1..=10 {
        for i in 0..100_000i64 {
            let f = Function::from_closure(move |_: &[Value]| Ok(Value::Int(i))).unwrap();
            black_box(&f);
        }
        checkpoints.push(rss_kib());
        if chunk % 5 == 0 {
            println!(
                "  after {}k closure create/drop: RSS {} KiB",
                chunk * 100,
                rss_kib()
            );
        }
    }
    let end = rss_kib();
    let first = checkpoints[0];
    let max = *checkpoints.iter().max().unwrap();
    println!(
        "soak: RSS {start} KiB at start, {first} after the first 1M calls, {after_calls} after 10M \
         calls, {end} after 1M closures; largest {max} KiB (growth after warm-up: {} KiB)",
        max as i64 - first as i64
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let h = handles();
    match args.first().map(String::as_str) {
        None => table(&h),
        Some("--soak") => soak(&h),
        Some("--case") => {
            let name = args.get(1).expect("--case NAME");
            let n: u64 = match args.get(2).map(String::as_str) {
                Some("--iterations") => args.get(3).and_then(|s| s.parse().ok()).expect("N"),
                _ => 100_000,
            };
            if !run_case(&h, name, n) {
                eprintln!(
                    "unknown case {name}; cases: {:?}",
                    CASES.iter().map(|c| c.0).collect::<Vec<_>>()
                );
                std::process::exit(2);
            }
        }
        Some(other) => {
            eprintln!("usage: polyffi-bench [--soak | --case NAME --iterations N] (got {other})");
            std::process::exit(2);
        }
    }
}
