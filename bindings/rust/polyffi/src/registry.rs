//! The global registry and modules: register / list / remove globals, [`Module`] (loaded
//! libraries, imports, entry functions), and the `import_api!` macro's lookup helper.
use std::ffi::{c_void, CStr, CString};
use std::os::raw::{c_char, c_int};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::OnceLock;

use polyffi_sys as sys;

use crate::errors::{check_call, Error, Result};
use crate::function::Function;
pub use crate::handle::Module;
use crate::handle::{core_global, with_c_str};
use crate::value::Value;

/// Wraps `closure` as a function and registers it as the global `name` (a taken name is a
/// ValueError). Returns the function.
pub fn register_global<F>(name: &str, closure: F) -> Result<Function>
where
    F: Fn(&[Value]) -> Result<Value> + Send + Sync + 'static,
{
    let f = Function::from_closure(closure)?;
    f.register_global(name, false)?;
    Ok(f)
}

/// Every registered global name.
pub fn list_global_names() -> Result<Vec<String>> {
    crate::library::ensure()?;
    let mut size: c_int = 0;
    let mut names: *mut *const c_char = std::ptr::null_mut();
    // SAFETY: out-parameters receive thread-local storage, copied at once.
    check_call(unsafe { sys::TVMFuncListGlobalNames(&mut size, &mut names) })?;
    let size = usize::try_from(size).unwrap_or(0);
    if size == 0 || names.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: `size` valid C strings.
    let names = unsafe { std::slice::from_raw_parts(names, size) };
    Ok(names
        .iter()
        .map(|&p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        .collect())
}

/// Removes the global `name`; removing an absent name succeeds.
pub fn remove_global(name: &str) -> Result<()> {
    crate::library::ensure()?;
    let c_name = CString::new(name)?;
    // SAFETY: borrowed NUL-terminated name.
    check_call(unsafe { sys::TVMFuncRemoveGlobal(c_name.as_ptr()) })
}

/// A global looked up once and cached, for `import_api!`.
#[doc(hidden)]
pub fn cached_global<'a>(slot: &'a OnceLock<Function>, name: &str) -> Result<&'a Function> {
    if let Some(f) = slot.get() {
        return Ok(f);
    }
    let f = Function::global(name)?;
    Ok(slot.get_or_init(|| f))
}

impl Module {
    /// Loads a module from a file, the format taken from its suffix (`.so` loads a shared
    /// library, registering the globals of C++ plugins). A missing file is a ValueError; an
    /// unloadable one carries the loader's own message.
    pub fn load(path: impl AsRef<Path>) -> Result<Module> {
        Self::load_with_format(path, "")
    }

    /// Loads a module with an explicit format (`"so"`, ...).
    pub fn load_with_format(path: impl AsRef<Path>, format: &str) -> Result<Module> {
        crate::library::ensure()?;
        let path = path.as_ref();
        let c_path = CString::new(path.to_str().ok_or_else(|| {
            Error::value_error(format!("module path is not UTF-8: {}", path.display()))
        })?)?;
        let c_fmt = CString::new(format)?;
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: borrowed strings; out receives an owned handle.
        check_call(unsafe { sys::TVMModLoadFromFile(c_path.as_ptr(), c_fmt.as_ptr(), &mut out) })?;
        NonNull::new(out)
            // SAFETY: an owned module handle.
            .map(|h| unsafe { Module::from_raw(h) })
            .ok_or_else(|| Error::new("InternalError", "TVMModLoadFromFile returned NULL"))
    }

    /// The module's function `name`, or None. With `query_imports`, imported modules too.
    pub fn get_function(&self, name: &str, query_imports: bool) -> Result<Option<Function>> {
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: borrowed module and name; out receives an owned handle or NULL.
        check_call(with_c_str(name, |p| unsafe {
            sys::TVMModGetFunction(self.as_raw(), p, query_imports as c_int, &mut out)
        })?)?;
        Ok(NonNull::new(out).map(|h| unsafe { Function::from_raw(h) }))
    }

    /// The module's function `name`; AttributeError when it has none.
    pub fn function(&self, name: &str) -> Result<Function> {
        self.get_function(name, false)?
            .ok_or_else(|| Error::new("AttributeError", format!("Module has no function '{name}'")))
    }

    /// Makes `other` an import of this module (found then with `query_imports`).
    pub fn import(&self, other: &Module) -> Result<()> {
        // SAFETY: both borrowed; the module takes its own reference to `other`.
        check_call(unsafe { sys::TVMModImport(self.as_raw(), other.as_raw()) })
    }

    /// The entry function named by the library's `__tvm_main__`; AttributeError without one.
    pub fn entry_func(&self) -> Result<Function> {
        self.function("__tvm_main__")
    }

    /// The module's type key (`"library"`, `"GraphExecutor"`, ...).
    pub fn type_key(&self) -> Result<String> {
        core_global!("runtime.ModuleGetTypeKey")?.invoke::<String>((self,))
    }

    /// The modules this one imports.
    pub fn imports(&self) -> Result<Vec<Module>> {
        let n: i64 = core_global!("runtime.ModuleImportsSize")?.invoke((self,))?;
        let get = core_global!("runtime.ModuleGetImport")?;
        (0..n).map(|i| get.invoke::<Module>((self, i))).collect()
    }
}
