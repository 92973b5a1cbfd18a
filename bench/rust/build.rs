//! Links libbench_baseline.so (the C floors, from the CMake bench build) when it sits next to
//! libpolyffi, and sets an rpath to that directory.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_POLYFFI_LIB_DIR");
    println!("cargo::rustc-check-cfg=cfg(has_baseline)");
    // The tvm-ffi peer binary finds libtvm_ffi where `tvm-ffi-config --libdir` says.
    if std::env::var_os("CARGO_FEATURE_TVM_FFI").is_some() {
        println!("cargo:rerun-if-env-changed=PATH");
        if let Ok(out) = std::process::Command::new("tvm-ffi-config")
            .arg("--libdir")
            .output()
        {
            let libdir = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && !libdir.is_empty() {
                println!("cargo:rustc-link-arg-bin=tvm-ffi-rows=-Wl,-rpath,{libdir}");
            }
        }
    }
    let dir = std::env::var("DEP_POLYFFI_LIB_DIR").unwrap_or_default();
    if dir.is_empty() {
        return;
    }
    println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    println!("cargo:rustc-env=POLYFFI_BENCH_LIB_DIR={dir}");
    let baseline = std::path::Path::new(&dir).join("libbench_baseline.so");
    println!("cargo:rerun-if-changed={}", baseline.display());
    if baseline.exists() {
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:rustc-link-lib=dylib=bench_baseline");
        println!("cargo:rustc-cfg=has_baseline");
    } else {
        println!("cargo:warning=no libbench_baseline.so in {dir}: the floor rows are skipped");
    }
}
