//! The ABI handshake: the binding refuses a libpolyffi whose ABI digest differs from the one it
//! was compiled against, with a typed Error naming both digests, instead of running on a
//! mismatched layout. The refusal is checked in a child process of this test binary that runs
//! with `build/lib/abi_variant/libpolyffi.so` (every export the same, the digest not) preloaded.
mod common;

use std::process::Command;

const PROBE_ENV: &str = "POLYFFI_ABI_PROBE";

fn header_digest() -> String {
    let header =
        std::fs::read_to_string(common::repo_root().join("c_api/include/polyffi/c_runtime_api.h"))
            .unwrap();
    let line = header
        .lines()
        .find(|l| l.starts_with("#define POLYFFI_ABI_DIGEST "))
        .expect("no POLYFFI_ABI_DIGEST in c_runtime_api.h");
    line.split('"').nth(1).unwrap().to_string()
}

#[test]
fn built_against_the_headers_digest() {
    assert_eq!(polyffi::library::built_abi_digest(), header_digest());
    assert!(polyffi::library::runtime_version().is_ok());
}

/// Runs only in the child: the first API use performs the handshake.
#[test]
fn abi_probe_child() {
    if std::env::var_os(PROBE_ENV).is_none() {
        return;
    }
    match polyffi::library::runtime_version() {
        Ok(v) => println!("PROBE accepted {v}"),
        Err(e) => {
            println!("PROBE {}: {}", e.kind(), e.message());
            std::process::exit(3);
        }
    }
}

#[test]
fn library_with_another_digest_is_refused_naming_both_digests() {
    let variant = common::lib_dir().join("abi_variant/libpolyffi.so");
    assert!(variant.exists(), "{} not built", variant.display());
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "abi_probe_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE_ENV, "1")
        .env("LD_PRELOAD", &variant)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let digest = header_digest();
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        text.contains("PROBE RuntimeError: polyffi ABI mismatch"),
        "{text}"
    );
    assert!(text.contains(&format!("ABI digest {digest},")), "{text}");
    assert!(
        text.contains(&format!("ABI digest variant-for-tests-{digest}")),
        "{text}"
    );
}
