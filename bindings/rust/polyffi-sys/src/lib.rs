//! Raw bindings to libpolyffi's C ABI: `c_runtime_api.h`, `c_backend_api.h`, `c_async_api.h` and
//! `c_direct_api.h`, by bindgen at build time. Everything here is `unsafe` and follows the
//! ownership words written beside each declaration in the headers; the `polyffi` crate is the
//! safe API over it.
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    clippy::all
)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

/// DLPack >= 0.8's boolean type code; Debian's dlpack.h (0.6) lacks it (polyffi/dlpack_compat.h).
pub const kDLBool: u32 = 6;
