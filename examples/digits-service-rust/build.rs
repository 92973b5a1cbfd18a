//! rpath to libpolyffi (from polyffi-sys) so the binary runs without LD_LIBRARY_PATH.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_POLYFFI_LIB_DIR");
    let dir = std::env::var("DEP_POLYFFI_LIB_DIR").unwrap_or_default();
    if !dir.is_empty() {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
