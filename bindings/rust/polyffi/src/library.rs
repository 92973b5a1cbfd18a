//! Finding the runtime and the version handshake. libpolyffi is linked by polyffi-sys (see its
//! build script for where it is looked up); the first use of the API compares the loaded
//! library's major version with the one this crate was built against, once per process.
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

fn handshake() -> &'static Result<(i32, i32, i32)> {
    HANDSHAKE.get_or_init(|| {
        let (mut major, mut minor, mut patch) = (0, 0, 0);
        // SAFETY: plain out-parameters.
        unsafe { polyffi_sys::TVMAPIGetVersion(&mut major, &mut minor, &mut patch) };
        let loaded = (major, minor, patch);
        check_version(BUILT_VERSION, loaded).map(|_| loaded)
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
}
