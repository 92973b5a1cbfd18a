//! Passes polyffi-sys's library directory on: an rpath for this crate's tests (unit tests too),
//! examples and benches, and POLYFFI_BUILD_LIB_DIR (where the tests find the fixture libraries
//! by default).
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_POLYFFI_LIB_DIR");
    let dir = std::env::var("DEP_POLYFFI_LIB_DIR").unwrap_or_default();
    if !dir.is_empty() {
        // Every binary of this package: integration tests, examples and the unit-test binary.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
    println!("cargo:rustc-env=POLYFFI_BUILD_LIB_DIR={dir}");
}
