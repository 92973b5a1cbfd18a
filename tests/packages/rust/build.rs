//! polyffi-sys builds libpolyffi (feature `bundled`) and names its directory through its `links`
//! metadata: an rpath for this binary, and the directory the run checks against.
fn main() {
    let dir = std::env::var("DEP_POLYFFI_LIB_DIR").expect("polyffi-sys names no library directory");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    println!("cargo:rustc-env=POLYFFI_PACKAGED_LIB_DIR={dir}");
}
