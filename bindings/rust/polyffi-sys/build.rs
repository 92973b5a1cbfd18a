//! Generates the raw bindings from the project's C headers (bindgen, libclang) and tells rustc
//! where libpolyffi is: POLYFFI_LIB_DIR, else pkg-config `polyffi`, else (feature `bundled`)
//! a CMake build of this repository. Generating the bindings needs only the headers, so
//! `cargo check` / `cargo doc` work without a built library when linking is skipped
//! (`--no-default-features` with nothing installed, or DOCS_RS / POLYFFI_NO_LINK set).
use std::env;
use std::path::{Path, PathBuf};

const ENV_VARS: &[&str] = &[
    "POLYFFI_LIB_DIR",
    "POLYFFI_INCLUDE_DIR",
    "POLYFFI_NO_LINK",
    "DOCS_RS",
    "PKG_CONFIG_PATH",
    "LIBCLANG_PATH",
    "CMAKE_GENERATOR",
];

fn main() {
    for var in ENV_VARS {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    // The published crate carries the core's sources in polyffi_src/ (ci/package.sh), with the
    // headers they need (nlohmann/json, dlpack) in polyffi_src/vendor; in the repository the
    // core is three levels up.
    let packaged = manifest.join("polyffi_src");
    let repo = if packaged.join("CMakeLists.txt").exists() {
        packaged
    } else {
        manifest.join("../../..")
    };
    let mut include_dirs: Vec<PathBuf> = Vec::new();
    if let Some(dir) = env::var_os("POLYFFI_INCLUDE_DIR") {
        include_dirs.push(PathBuf::from(dir));
    }

    let lib_dir = if env::var_os("DOCS_RS").is_some() || env::var_os("POLYFFI_NO_LINK").is_some() {
        None
    } else {
        locate_library(&repo, &mut include_dirs)
    };
    if let Some(dir) = &lib_dir {
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-lib=dylib=polyffi");
        // Dependents read this as DEP_POLYFFI_LIB_DIR (rpath, test fixtures).
        println!("cargo:lib_dir={}", dir.display());
    }

    let repo_include = repo.join("c_api/include");
    if repo_include.join("polyffi/c_runtime_api.h").exists() {
        include_dirs.push(repo_include);
    }
    let vendor_include = repo.join("vendor/include");
    if vendor_include.join("dlpack/dlpack.h").exists() {
        include_dirs.push(vendor_include);
    }
    generate_bindings(&include_dirs);
}

/// Where libpolyffi is, in the order the README documents.
fn locate_library(repo: &Path, include_dirs: &mut Vec<PathBuf>) -> Option<PathBuf> {
    if let Some(dir) = env::var_os("POLYFFI_LIB_DIR") {
        let dir = PathBuf::from(dir);
        let dir = dir.canonicalize().unwrap_or(dir);
        if !dir.join("libpolyffi.so").exists() && !dir.join("libpolyffi.dylib").exists() {
            println!(
                "cargo:warning=POLYFFI_LIB_DIR={} holds no libpolyffi; linking may fail",
                dir.display()
            );
        }
        return Some(dir);
    }
    match pkg_config::Config::new()
        .cargo_metadata(false)
        .probe("polyffi")
    {
        Ok(lib) => {
            include_dirs.extend(lib.include_paths.iter().cloned());
            return lib
                .link_paths
                .first()
                .cloned()
                .or_else(|| Some(PathBuf::from("/usr/lib")));
        }
        Err(err) => {
            if !cfg!(feature = "bundled") {
                println!(
                    "cargo:warning=libpolyffi not found (POLYFFI_LIB_DIR unset; pkg-config: {}); \
                     linking will rely on the system linker's default paths",
                    err.to_string().lines().next().unwrap_or("")
                );
                println!("cargo:rustc-link-lib=dylib=polyffi");
                return None;
            }
        }
    }
    bundled(repo)
}

#[cfg(feature = "bundled")]
fn bundled(repo: &Path) -> Option<PathBuf> {
    for dir in ["core", "c_api"] {
        println!("cargo:rerun-if-changed={}", repo.join(dir).display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        repo.join("CMakeLists.txt").display()
    );
    // libpolyffi_test_factory.so is copied from this TVM export (c_api/testing/CMakeLists.txt);
    // the published crate has no fixtures.
    let fixture = repo.join("tests/tvm_models/tvm018/multi_io_b1/factory.so");
    if fixture.exists() {
        println!("cargo:rerun-if-changed={}", fixture.display());
    }
    let mut cfg = cmake::Config::new(repo);
    cfg.profile("Release")
        .define("POLYFFI_BUILD_TESTS", "OFF")
        .define("POLYFFI_BUILD_BENCH", "OFF")
        .build_target("all");
    let vendor = repo.join("vendor");
    if vendor.join("include/dlpack/dlpack.h").exists() {
        // The published crate: only the library, with the vendored headers.
        cfg.define("POLYFFI_BUILD_LIBRARY_ONLY", "ON")
            .define("POLYFFI_INSTALL", "OFF")
            .define("DLPACK_INCLUDE_DIR", vendor.join("include"))
            .define("nlohmann_json_DIR", vendor.join("cmake/nlohmann_json"));
    } else {
        // The repository: the library, its test fixtures (libpolyffi_test_factory.so included: a
        // target in `all`) and the example model; no gtest suites or benchmarks.
        cfg.define("POLYFFI_BUILD_EXAMPLES", "ON");
    }
    if env::var_os("CMAKE_GENERATOR").is_none() && which("ninja") {
        cfg.generator("Ninja");
    }
    let out = cfg.build();
    Some(out.join("build").join("lib"))
}

#[cfg(not(feature = "bundled"))]
fn bundled(_repo: &Path) -> Option<PathBuf> {
    None
}

#[allow(dead_code)]
fn which(tool: &str) -> bool {
    env::var_os("PATH")
        .map(|paths| env::split_paths(&paths).any(|p| p.join(tool).is_file()))
        .unwrap_or(false)
}

fn generate_bindings(include_dirs: &[PathBuf]) {
    let mut builder = bindgen::Builder::default()
        .header_contents(
            "polyffi_wrapper.h",
            "#include <polyffi/c_runtime_api.h>\n#include <polyffi/c_backend_api.h>\n\
             #include <polyffi/c_async_api.h>\n#include <polyffi/c_direct_api.h>\n",
        )
        .allowlist_function("TVM.*")
        .allowlist_type("TVM.*|DL.*|FTVM.*")
        .allowlist_var("kTVM.*|kDL.*|POLYFFI_.*|TVM_VERSION")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .derive_debug(true)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for dir in include_dirs {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    let bindings = builder
        .generate()
        .expect("bindgen could not parse polyffi's headers (is libclang-dev installed?)");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("bindings.rs");
    bindings.write_to_file(out).expect("writing bindings.rs");
}
