//! Finding the runtime and the handshake. libpolyffi is linked by polyffi-sys (see its build
//! script for where it is looked up); the first use of the API compares the loaded library's
//! major version and ABI digest (declarations and struct layouts of the C headers) with the ones
//! this crate was built against, once per process.
use std::ffi::CStr;
use std::sync::OnceLock;

use crate::errors::{Error, Result};

/// The version of the C headers this crate was compiled against, `(major, minor, patch)`.
pub const BUILT_VERSION: (u32, u32, u32) = (
    polyffi_sys::POLYFFI_VERSION_MAJOR,
    polyffi_sys::POLYFFI_VERSION_MINOR,
    polyffi_sys::POLYFFI_VERSION_PATCH,
);

static HANDSHAKE: OnceLock<Result<(i32, i32, i32)>> = OnceLock::new();

/// Compares a loaded library's version with the headers' one: the major numbers must agree.
pub fn check_version(built: (u32, u32, u32), loaded: (i32, i32, i32)) -> Result<()> {
    if i64::from(built.0) == i64::from(loaded.0) {
        return Ok(());
    }
    Err(Error::new(
        "RuntimeError",
        format!(
            "polyffi version mismatch: the Rust binding was built for libpolyffi {}.{}.{} but \
             the loaded libpolyffi is {}.{}.{}",
            built.0, built.1, built.2, loaded.0, loaded.1, loaded.2
        ),
    ))
}

/// `POLYFFI_ABI_DIGEST` of the C headers this crate was compiled against.
pub fn built_abi_digest() -> &'static str {
    CStr::from_bytes_with_nul(polyffi_sys::POLYFFI_ABI_DIGEST)
        .ok()
        .and_then(|c| c.to_str().ok())
        .unwrap_or("")
}

/// Compares the loaded library's ABI digest with the headers' one: they must be equal.
pub fn check_abi_digest(built: &str, loaded: &str, loaded_version: (i32, i32, i32)) -> Result<()> {
    if built == loaded {
        return Ok(());
    }
    let b = BUILT_VERSION;
    let l = loaded_version;
    Err(Error::new(
        "RuntimeError",
        format!(
            "polyffi ABI mismatch: the Rust binding was built against libpolyffi {}.{}.{} with ABI \
             digest {built}, but the loaded libpolyffi {}.{}.{} has ABI digest {loaded}",
            b.0, b.1, b.2, l.0, l.1, l.2
        ),
    ))
}

/// The loaded libpolyffi's ABI digest (`TVMAPIGetAbiDigest`).
fn loaded_abi_digest() -> String {
    let mut out: *const std::os::raw::c_char = std::ptr::null();
    // SAFETY: a plain out-parameter; the library returns a static NUL-terminated string.
    let rc = unsafe { polyffi_sys::TVMAPIGetAbiDigest(&mut out) };
    if rc != 0 || out.is_null() {
        return "(none)".to_string();
    }
    // SAFETY: non-NULL, static and NUL-terminated (c_runtime_api.h).
    unsafe { CStr::from_ptr(out) }
        .to_string_lossy()
        .into_owned()
}

fn handshake() -> &'static Result<(i32, i32, i32)> {
    HANDSHAKE.get_or_init(|| {
        let (mut major, mut minor, mut patch) = (0, 0, 0);
        // SAFETY: plain out-parameters.
        unsafe { polyffi_sys::TVMAPIGetVersion(&mut major, &mut minor, &mut patch) };
        let loaded = (major, minor, patch);
        check_version(BUILT_VERSION, loaded)?;
        check_abi_digest(built_abi_digest(), &loaded_abi_digest(), loaded)?;
        Ok(loaded)
    })
}

/// Runs the handshake on first use; every entry point that creates something calls this.
#[inline]
pub(crate) fn ensure() -> Result<()> {
    match handshake() {
        Ok(_) => Ok(()),
        Err(e) => Err(e.clone()),
    }
}

/// The loaded libpolyffi's version, `"major.minor.patch"`; an Error naming both versions when
/// its major number differs from the one this crate was built for.
pub fn runtime_version() -> Result<String> {
    match handshake() {
        Ok((a, b, c)) => Ok(format!("{a}.{b}.{c}")),
        Err(e) => Err(e.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn major_mismatch_names_both_versions() {
        let err = check_version((1, 2, 3), (2, 0, 7)).unwrap_err();
        assert_eq!(err.kind(), "RuntimeError");
        assert!(err.message().contains("1.2.3"), "{err}");
        assert!(err.message().contains("2.0.7"), "{err}");
        assert!(check_version((1, 2, 3), (1, 9, 0)).is_ok());
    }

    #[test]
    fn abi_digest_mismatch_names_both_digests() {
        let err = check_abi_digest("aaaa", "bbbb", (0, 1, 0)).unwrap_err();
        assert_eq!(err.kind(), "RuntimeError");
        assert!(err.message().contains("ABI digest aaaa"), "{err}");
        assert!(err.message().contains("ABI digest bbbb"), "{err}");
        assert!(check_abi_digest("aaaa", "aaaa", (0, 1, 0)).is_ok());
        assert_eq!(built_abi_digest().len(), 64);
    }
}
