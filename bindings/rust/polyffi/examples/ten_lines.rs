// The README's "Rust in ten lines": load the fixtures, call a typed global, pass a closure to C.
use polyffi::{Function, Module, Value};

fn main() -> polyffi::Result<()> {
    let lib = std::env::var("POLYFFI_LIB_DIR").unwrap_or(env!("POLYFFI_BUILD_LIB_DIR").into());
    Module::load(format!("{lib}/libpolyffi_testing.so"))?; // registers testing.*
    let add3 = Function::global("testing.add3")?;
    println!("add3(1, 2, 3) = {}", add3.invoke::<i64>((1, 2, 3))?);
    let twice = Function::from_closure(|args: &[Value]| {
        Ok(Value::Int(2 * i64::try_from(args[0].clone())?))
    })?;
    let apply = Function::global("testing.apply")?;
    println!("apply(twice, 21) = {}", apply.invoke::<i64>((&twice, 21))?);
    Ok(())
}
