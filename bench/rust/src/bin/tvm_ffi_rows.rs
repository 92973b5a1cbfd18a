//! The same work through apache tvm-ffi's own Rust crate (`tvm-ffi` 0.1.15, libtvm_ffi from
//! `pip install apache-tvm-ffi`), against the bench.* globals of bench/calls/tvm_ffi_fixtures.cc
//! (the C++ fixtures bench_calls uses). Prints one JSON object per row for polyffi-bench.
//!
//! tvm-ffi-rows <path to libbench_tvm_ffi_fixtures.so>
use std::ffi::{c_char, c_int, c_void, CString};
use std::hint::black_box;

use polyffi_bench::{measure, CountingAlloc, CALL_N, STR16};
use tvm_ffi::{Any, Function, Result};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlerror() -> *const c_char;
}

fn row(case: &str, ns: f64, allocs: f64) {
    println!(
        "{}",
        serde_json::json!({"case": case, "impl": "tvm_ffi_rust", "ns": ns, "allocs": allocs})
    );
}

fn main() -> Result<()> {
    let path = std::env::args()
        .nth(1)
        .expect("usage: tvm-ffi-rows FIXTURES.so [--case N --iterations K]");
    let c_path = CString::new(path.clone()).unwrap();
    // RTLD_NOW | RTLD_GLOBAL: the library registers bench.* in its static initialisers.
    if unsafe { dlopen(c_path.as_ptr(), 2 | 0x100) }.is_null() {
        let msg = unsafe { std::ffi::CStr::from_ptr(dlerror()) };
        panic!("dlopen {path}: {}", msg.to_string_lossy());
    }
    let nop = Function::get_global("bench.nop")?;
    let add3 = Function::get_global("bench.add3")?;
    let echo = Function::get_global("bench.echo")?;
    let call_n = Function::get_global("bench.call_n")?;
    assert_eq!(
        i64::try_from(add3.call_tuple_with_len::<3, _>((1_i64, 2_i64, 3_i64))?)?,
        6
    );

    let add_one = Function::from_typed(|x: i64| -> Result<i64> { Ok(x + 1) });
    let body = |case: &str| -> Box<dyn Fn() + '_> {
        match case {
            "nop" => Box::new(|| {
                black_box(nop.call_tuple_with_len::<0, _>(()).unwrap());
            }),
            "add3" => Box::new(|| {
                let r: Any = add3
                    .call_tuple_with_len::<3, _>((black_box(1_i64), 2_i64, 3_i64))
                    .unwrap();
                black_box(i64::try_from(r).unwrap());
            }),
            // The crate's own string type is what it passes and returns (built per call from
            // the &str, as polyffi packs the &str per call).
            "str16" => Box::new(|| {
                let arg = tvm_ffi::String::from(black_box(STR16));
                let r: Any = echo.call_tuple_with_len::<1, _>((&arg,)).unwrap();
                black_box(tvm_ffi::String::try_from(r).unwrap());
            }),
            "callback" => Box::new(|| {
                let r = call_n
                    .call_tuple_with_len::<2, _>((&add_one, CALL_N))
                    .unwrap();
                black_box(i64::try_from(r).unwrap());
            }),
            "lookup" => Box::new(|| {
                black_box(Function::get_global("bench.add3").unwrap());
            }),
            other => panic!("unknown case {other}"),
        }
    };
    // tvm-ffi-rows FIXTURES --case NAME --iterations N: untimed, for callgrind.
    let args: Vec<String> = std::env::args().collect();
    if args.get(2).map(String::as_str) == Some("--case") {
        let f = body(&args[3]);
        let n: u64 = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(100_000);
        (0..n).for_each(|_| f());
        return Ok(());
    }
    for (case, iters, per) in [
        ("nop", 2_000_000, 1),
        ("add3", 2_000_000, 1),
        ("str16", 1_000_000, 1),
        ("callback", 3, CALL_N as u64),
        ("lookup", 1_000_000, 1),
    ] {
        let f = body(case);
        let (ns, a) = measure(iters, per, || f());
        row(case, ns, a);
    }
    Ok(())
}
