//! Safe Rust API over libpolyffi, a runtime whose public surface is the classic TVM C ABI.
//!
//! ```no_run
//! use polyffi::{Function, Module, Value};
//!
//! fn main() -> polyffi::Result<()> {
//!     Module::load("build/lib/libpolyffi_testing.so")?;          // registers testing.*
//!     let add3 = Function::global("testing.add3")?;
//!     assert_eq!(add3.invoke::<i64>((1, 2, 3))?, 6);          // typed, no allocation
//!     let twice = Function::from_closure(|args: &[Value]| {
//!         Ok(Value::Int(2 * i64::try_from(args[0].clone())?))
//!     })?;
//!     let apply = Function::global("testing.apply")?;
//!     assert_eq!(apply.invoke::<i64>((&twice, 21))?, 42);    // C calls the closure
//!     Ok(())
//! }
//! ```
//!
//! Modules follow the project's layout: [`library`] (version handshake), [`value`]
//! (conversions), [`function`], [`callback`] (closures), [`registry`] (globals, modules),
//! [`errors`], [`ndarray`], plus [`graph`] and [`vm`] for compiled models and [`lm`] for text
//! generation with a language model.

pub mod async_call;
pub mod callback;
pub mod errors;
pub mod function;
pub mod graph;
mod handle;
pub mod library;
pub mod lm;
pub mod ndarray;
pub mod registry;
pub mod value;
pub mod vm;

pub use async_call::{configure_async, AsyncPool, CallFuture, CancelState};
pub use errors::{Error, Result};
pub use function::Function;
pub use graph::GraphModule;
pub use library::runtime_version;
pub use lm::{FinishReason, GenerateOptions, Generation, LanguageModel, Prompt, Token};
pub use ndarray::{Element, NDArray};
pub use registry::{list_global_names, register_global, remove_global, Module};
pub use value::{
    Array, DataType, DataTypeOrString, Device, FromRet, IntoArgs, Map, Object, Shape, ToArg, Value,
};
pub use vm::{Allocator, Output, VirtualMachine, VmArg, VmFunction};

/// Re-exported for [`import_api!`] and for users of the raw ABI.
pub use polyffi_sys as sys;

/// Typed wrappers for the globals `prefix.name`, each looked up once (on its first call):
///
/// ```no_run
/// polyffi::import_api! {
///     mod testing = "testing" {
///         fn add3(a: i64, b: i64, c: i64) -> i64;
///         fn concat(a: &str, b: &str) -> String;
///     }
/// }
/// # fn main() -> polyffi::Result<()> {
/// assert_eq!(testing::add3(1, 2, 3)?, 6);
/// # Ok(()) }
/// ```
#[macro_export]
macro_rules! import_api {
    ($(
        $vis:vis mod $module:ident = $prefix:literal {
            $( fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) $(-> $ret:ty)? ; )*
        }
    )*) => {$(
        $vis mod $module {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[allow(dead_code)]
                pub fn $name($($arg: $ty),*) -> $crate::Result<$crate::import_api!(@ret $($ret)?)> {
                    static F: ::std::sync::OnceLock<$crate::Function> = ::std::sync::OnceLock::new();
                    let f = $crate::registry::cached_global(&F, concat!($prefix, ".", stringify!($name)))?;
                    f.invoke(($($arg,)*))
                }
            )*
        }
    )*};
    (@ret) => { () };
    (@ret $ret:ty) => { $ret };
}
