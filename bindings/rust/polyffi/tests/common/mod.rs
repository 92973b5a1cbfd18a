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
