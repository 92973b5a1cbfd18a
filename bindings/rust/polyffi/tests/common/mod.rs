//! Shared by the integration tests: where the fixture libraries are, and loading them once.
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use polyffi::{Function, Module};

/// The fixture libraries' directory: POLYFFI_TEST_LIB_DIR, else POLYFFI_LIB_DIR, else the
/// directory polyffi-sys linked against (the bundled build puts the fixtures there).
pub fn lib_dir() -> PathBuf {
    ["POLYFFI_TEST_LIB_DIR", "POLYFFI_LIB_DIR"]
        .iter()
        .find_map(std::env::var_os)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("POLYFFI_BUILD_LIB_DIR")))
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../..")
        .canonicalize()
        .unwrap()
}

pub fn lib_path(name: &str) -> PathBuf {
    lib_dir().join(format!("lib{name}.so"))
}

/// Loads libpolyffi_testing.so (the testing.* globals) once per process.
pub fn testing() -> &'static Module {
    static M: OnceLock<Module> = OnceLock::new();
    M.get_or_init(|| {
        Module::load(lib_path("polyffi_testing"))
            .unwrap_or_else(|e| panic!("loading {}: {e}", lib_path("polyffi_testing").display()))
    })
}

pub fn global(name: &str) -> Function {
    testing();
    Function::global(name).unwrap()
}

/// Panics the tests cause on purpose inside closures (caught by the binding and turned into
/// `RustPanic` errors) are not printed; every other panic still is.
pub fn quiet_intended_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let text = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| info.payload().downcast_ref::<&str>().copied())
                .unwrap_or("");
            if !text.starts_with("[intended]") {
                default(info);
            }
        }));
    });
}

// ---- TVM fixture files (tests/tvm_models/*: io.json entries name raw tensor files) ----

pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

pub fn shape_of(desc: &serde_json::Value) -> Vec<i64> {
    desc["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_i64().unwrap())
        .collect()
}

pub fn dtype_of(desc: &serde_json::Value) -> polyffi::DataType {
    polyffi::DataType::parse(desc["dtype"].as_str().unwrap()).unwrap()
}

/// The raw little-endian bytes of a tensor file named in an io.json entry.
pub fn raw(dir: &Path, desc: &serde_json::Value) -> Vec<u8> {
    let path = dir.join(desc["file"].as_str().unwrap());
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn load_tensor(dir: &Path, desc: &serde_json::Value) -> polyffi::NDArray {
    polyffi::NDArray::from_bytes(&raw(dir, desc), &shape_of(desc), dtype_of(desc)).unwrap()
}
