//! The shared conformance suite (tests/conformance/cases/*.json), one named test per case
//! (`cargo test --test conformance values.int` filters), with the host callbacks of
//! docs/spec/conformance.md section 2 (host callbacks) written in Rust. Mirrors the C and Python
//! runners: same tags, steps and checks. Honours tests/conformance/capabilities/rust.json, checks
//! that every host callable of a case was finalized exactly once, ends with the leak check on
//! testing.live_objects(), and writes build/conformance/rust.json (directory overridable with
//! POLYFFI_CONFORMANCE_OUT).
mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use libtest_mimic::{Arguments, Failed, Trial};
use polyffi::{Array, DataType, Device, Function, Map, Module, NDArray, Shape, Value};
use serde_json::Value as Json;

type Outcome<T = ()> = std::result::Result<T, String>;

// ---- Host callables ---------------------------------------------------------------------------

/// Host callables created and finalized, per case serial.
static LIVE: Mutex<Option<HashMap<u64, (i64, i64)>>> = Mutex::new(None);
static CURRENT_CASE: AtomicU64 = AtomicU64::new(0);

/// Lives inside a host closure: counted when made, counted again when the runtime's finalizer
/// drops the closure (and with it this guard).
struct LiveGuard {
    serial: u64,
}

impl LiveGuard {
    fn new(serial: u64) -> Self {
        LIVE.lock()
            .unwrap()
            .get_or_insert_with(HashMap::new)
            .entry(serial)
            .or_default()
            .0 += 1;
        LiveGuard { serial }
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        LIVE.lock()
            .unwrap()
            .get_or_insert_with(HashMap::new)
            .entry(self.serial)
            .or_default()
            .1 += 1;
    }
}

fn host_live(serial: u64) -> Outcome<i64> {
    let map = LIVE.lock().unwrap();
    let (created, finalized) = map
        .as_ref()
        .and_then(|m| m.get(&serial).copied())
        .unwrap_or((0, 0));
    if finalized > created {
        return Err(format!(
            "{finalized} finalizations for {created} host callables"
        ));
    }
    Ok(created - finalized)
}

fn int_arg(who: &str, i: usize, v: &Value) -> polyffi::Result<i64> {
    match v {
        Value::Int(x) => Ok(*x),
        other => Err(polyffi::Error::new(
            "TypeError",
            format!(
                "{who}: argument {i} expected int but got {}",
                other.type_name()
            ),
        )),
    }
}

fn host_add(args: &[Value], _: u64) -> polyffi::Result<Value> {
    let mut sum = 0i64;
    for (i, a) in args.iter().enumerate() {
        sum = sum.wrapping_add(int_arg("host.add", i, a)?);
    }
    Ok(Value::Int(sum))
}

fn host_concat(args: &[Value], _: u64) -> polyffi::Result<Value> {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        match a {
            Value::Str(s) => out.push_str(s),
            Value::Bytes(b) => out.push_str(&String::from_utf8_lossy(b)),
            other => {
                return Err(polyffi::Error::new(
                    "TypeError",
                    format!(
                        "host.concat: argument {i} expected str but got {}",
                        other.type_name()
                    ),
                ))
            }
        }
    }
    Ok(Value::Str(out))
}

fn host_identity(args: &[Value], _: u64) -> polyffi::Result<Value> {
    match args {
        [] => Ok(Value::Null),
        [x] => Ok(x.clone()),
        _ => Err(polyffi::Error::new(
            "TypeError",
            format!("host.identity expected 1 argument but got {}", args.len()),
        )),
    }
}

fn host_raise_value_error(_: &[Value], _: u64) -> polyffi::Result<Value> {
    Err(polyffi::Error::new("ValueError", "host boom"))
}

fn host_return_none(_: &[Value], _: u64) -> polyffi::Result<Value> {
    Ok(Value::Null)
}

fn host_adder(args: &[Value], serial: u64) -> polyffi::Result<Value> {
    if args.len() != 1 {
        return Err(polyffi::Error::new(
            "TypeError",
            format!("host.adder expected 1 argument but got {}", args.len()),
        ));
    }
    let y = int_arg("host.adder", 0, &args[0])?;
    let guard = LiveGuard::new(serial);
    let closure = Function::from_closure(move |xs: &[Value]| {
        let _alive = &guard;
        if xs.len() != 1 {
            return Err(polyffi::Error::new(
                "TypeError",
                format!(
                    "host.adder.<closure> expected 1 argument but got {}",
                    xs.len()
                ),
            ));
        }
        Ok(Value::Int(
            int_arg("host.adder.<closure>", 0, &xs[0])?.wrapping_add(y),
        ))
    })?;
    Ok(Value::Function(closure))
}

fn host_call_echo(args: &[Value], _: u64) -> polyffi::Result<Value> {
    Function::global("testing.echo")?.call(args)
}

type HostImpl = fn(&[Value], u64) -> polyffi::Result<Value>;

fn make_host_function(name: &str, serial: u64) -> Outcome<Function> {
    let imp: HostImpl = match name {
        "host.add" => host_add,
        "host.concat" => host_concat,
        "host.identity" => host_identity,
        "host.raise_value_error" => host_raise_value_error,
        "host.return_none" => host_return_none,
        "host.adder" => host_adder,
        "host.call_echo" => host_call_echo,
        other => return Err(format!("unknown host function {other}")),
    };
    let guard = LiveGuard::new(serial);
    // Only the runtime keeps the closure (and its guard): its finalizer is what drops it.
    // `let g = &guard` makes the closure capture the whole guard, not just its serial field.
    Function::from_closure(move |args: &[Value]| {
        let g = &guard;
        imp(args, g.serial)
    })
    .map_err(|e| format!("from_closure: {e}"))
}

// ---- Values -----------------------------------------------------------------------------------

fn parse_float(body: &Json) -> Outcome<f64> {
    if let Some(x) = body.as_f64() {
        return Ok(x);
    }
    match body.as_str() {
        Some("nan") => Ok(f64::NAN),
        Some("inf") => Ok(f64::INFINITY),
        Some("-inf") => Ok(f64::NEG_INFINITY),
        Some("-0.0") => Ok(-0.0),
        _ => Err(format!("bad float {body}")),
    }
}

fn tag_of(tagged: &Json) -> Outcome<(&str, &Json)> {
    match tagged.as_object() {
        Some(map) if map.len() == 1 => {
            let (k, v) = map.iter().next().unwrap();
            Ok((k.as_str(), v))
        }
        _ => Err(format!(
            "expected a tagged value with exactly one key, got {tagged}"
        )),
    }
}

fn string_of(tag: &str, body: &Json) -> Outcome<String> {
    if tag == "str" {
        return body
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("bad str {body}"));
    }
    let unit = body[0]
        .as_str()
        .ok_or_else(|| format!("bad str_repeat {body}"))?;
    let count = body[1]
        .as_u64()
        .ok_or_else(|| format!("bad str_repeat {body}"))?;
    Ok(unit.repeat(count as usize))
}

fn hex_bytes(s: &str) -> Outcome<Vec<u8>> {
    if s.len() % 2 != 0 {
        return Err(format!("odd hex {s}"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| format!("hex {s}: {e}")))
        .collect()
}

/// Row-major bytes of an `ndarray` tag's data in its dtype.
/// The dimensions of a {"shape": [...]} tag (int64 each).
fn shape_dims(body: &Json) -> Outcome<Vec<i64>> {
    body.as_array()
        .ok_or("bad shape")?
        .iter()
        .map(|d| d.as_i64().ok_or_else(|| format!("bad shape dimension {d}")))
        .collect()
}

fn ndarray_bytes(body: &Json) -> Outcome<(DataType, Vec<i64>, Vec<u8>)> {
    let dtype_text = body["dtype"].as_str().ok_or("ndarray without dtype")?;
    let dtype = DataType::parse(dtype_text).map_err(|e| e.to_string())?;
    let shape: Vec<i64> = body["shape"]
        .as_array()
        .ok_or("ndarray without shape")?
        .iter()
        .map(|d| d.as_i64().ok_or_else(|| format!("bad dim {d}")))
        .collect::<Outcome<_>>()?;
    let mut bytes = Vec::new();
    for e in body["data"].as_array().ok_or("ndarray without data")? {
        let int = || e.as_i64().ok_or_else(|| format!("bad element {e}"));
        match dtype_text {
            "float32" => bytes.extend_from_slice(&(parse_float(e)? as f32).to_le_bytes()),
            "float64" => bytes.extend_from_slice(&parse_float(e)?.to_le_bytes()),
            "int8" => bytes.extend_from_slice(&(int()? as i8).to_le_bytes()),
            "uint8" => bytes.extend_from_slice(&(int()? as u8).to_le_bytes()),
            "int16" => bytes.extend_from_slice(&(int()? as i16).to_le_bytes()),
            "uint16" => bytes.extend_from_slice(&(int()? as u16).to_le_bytes()),
            "int32" => bytes.extend_from_slice(&(int()? as i32).to_le_bytes()),
            "uint32" => bytes.extend_from_slice(&(int()? as u32).to_le_bytes()),
            "int64" => bytes.extend_from_slice(&int()?.to_le_bytes()),
            "uint64" => bytes.extend_from_slice(&(int()? as u64).to_le_bytes()),
            "bool" => bytes.push(u8::from(e.as_bool().ok_or("bad bool element")?)),
            other => return Err(format!("ndarray dtype {other} not handled by the runner")),
        }
    }
    Ok((dtype, shape, bytes))
}

fn describe(v: &Value) -> String {
    let mut text = format!("{} {:?}", v.type_name(), v);
    if let Value::Float(x) = v {
        text.push_str(&format!(" (bits {:#x})", x.to_bits()));
    }
    text.chars().take(240).collect()
}

// ---- One case ---------------------------------------------------------------------------------

struct CaseRun {
    lib_dir: PathBuf,
    serial: u64,
    vars: HashMap<String, Value>,
    modules: Vec<Module>,
    registered: Vec<String>,
}

impl CaseRun {
    fn var(&self, name: &str) -> Outcome<&Value> {
        self.vars
            .get(name)
            .ok_or_else(|| format!("variable {name} is not bound"))
    }

    fn load_module(&self, name: &str) -> polyffi::Result<Module> {
        Module::load(self.lib_dir.join(format!("lib{name}.so")))
    }

    fn resolve_module(&self, r: &Json) -> Outcome<Module> {
        let value = match r.as_str() {
            Some(name) => Value::Module(self.load_module(name).map_err(|e| e.to_string())?),
            None => self.build(r)?,
        };
        match value {
            Value::Module(m) => Ok(m),
            other => Err(format!("expected a module but got {}", describe(&other))),
        }
    }

    fn module_function(&self, spec: &Json, required: bool) -> Outcome<Option<Function>> {
        let m = self.resolve_module(&spec["module"])?;
        let name = spec["function"]
            .as_str()
            .ok_or("module function without a name")?;
        let query = spec
            .get("query_imports")
            .and_then(Json::as_bool)
            .unwrap_or(false);
        let f = m.get_function(name, query).map_err(|e| e.to_string())?;
        if f.is_none() && required {
            return Err(format!("module has no function {name}"));
        }
        Ok(f)
    }

    fn build(&self, tagged: &Json) -> Outcome<Value> {
        let (tag, body) = tag_of(tagged)?;
        let err = |e: polyffi::Error| format!("building {tagged}: {e}");
        Ok(match tag {
            "int" => Value::Int(body.as_i64().ok_or_else(|| format!("bad int {body}"))?),
            "float" => Value::Float(parse_float(body)?),
            "bool" => Value::Bool(body.as_bool().ok_or_else(|| format!("bad bool {body}"))?),
            "str" | "str_repeat" => Value::Str(string_of(tag, body)?),
            "bytes_hex" => Value::Bytes(hex_bytes(body.as_str().ok_or("bad bytes_hex")?)?),
            "null" => Value::Null,
            "device" => Value::Device(Device::new(
                body[0].as_i64().ok_or("bad device")? as i32,
                body[1].as_i64().ok_or("bad device")? as i32,
            )),
            "dtype" => {
                Value::DataType(DataType::parse(body.as_str().ok_or("bad dtype")?).map_err(err)?)
            }
            "host" => Value::Function(make_host_function(
                body.as_str().ok_or("bad host")?,
                self.serial,
            )?),
            "global" => {
                Value::Function(Function::global(body.as_str().ok_or("bad global")?).map_err(err)?)
            }
            "var" => self.var(body.as_str().ok_or("bad var")?)?.clone(),
            "module" => Value::Module(
                self.load_module(body.as_str().ok_or("bad module")?)
                    .map_err(err)?,
            ),
            "array" => {
                let items = body
                    .as_array()
                    .ok_or("bad array")?
                    .iter()
                    .map(|i| self.build(i))
                    .collect::<Outcome<Vec<_>>>()?;
                Value::Array(Array::new(&items).map_err(err)?)
            }
            "map" => {
                let mut items = Vec::new();
                for kv in body.as_array().ok_or("bad map")? {
                    items.push((self.build(&kv[0])?, self.build(&kv[1])?));
                }
                Value::Map(Map::new(&items).map_err(err)?)
            }
            "shape" => Value::Shape(Shape::from(shape_dims(body)?)),
            "ndarray" => {
                let (dtype, shape, bytes) = ndarray_bytes(body)?;
                let mut nd = NDArray::empty(&shape, dtype, Device::cpu(0)).map_err(err)?;
                nd.as_mut_slice::<u8>().ok();
                // Fill through a u8 view of the same memory.
                let n = nd.size_bytes();
                if n != bytes.len() {
                    return Err(format!("ndarray data has {} bytes, want {n}", bytes.len()));
                }
                if n > 0 {
                    // SAFETY: the array was just allocated compact on the CPU with n bytes.
                    unsafe {
                        std::ptr::copy_nonoverlapping(bytes.as_ptr(), nd.data_ptr() as *mut u8, n)
                    };
                }
                Value::NDArray(nd)
            }
            other => return Err(format!("unknown value tag {other}")),
        })
    }

    fn expect(&self, expect: &Json, actual: &Value, args: &[Value], path: &str) -> Outcome {
        let (tag, body) = tag_of(expect)?;
        let fail = |why: &str| -> Outcome {
            let mut text: String = expect.to_string().chars().take(300).collect();
            text = format!("{path}: expected {text} but got {}", describe(actual));
            if !why.is_empty() {
                text.push_str(&format!(" ({why})"));
            }
            Err(text)
        };
        let need = |kind: &str| -> Outcome {
            if actual.type_name() != kind {
                return fail(&format!("type {}, want {kind}", actual.type_name()));
            }
            Ok(())
        };
        match tag {
            "int" => {
                need("int")?;
                if Some(actual) != body.as_i64().map(Value::Int).as_ref() {
                    return fail("");
                }
            }
            "bool" => {
                need("bool")?;
                if Some(actual) != body.as_bool().map(Value::Bool).as_ref() {
                    return fail("");
                }
            }
            "float" => {
                need("float")?;
                let want = parse_float(body)?;
                if let Value::Float(x) = actual {
                    if x.to_bits() != want.to_bits() {
                        return fail("bits differ");
                    }
                }
            }
            "str" | "str_repeat" => {
                need("str")?;
                if actual != &Value::Str(string_of(tag, body)?) {
                    return fail("");
                }
            }
            "bytes_hex" => {
                need("bytes")?;
                if actual != &Value::Bytes(hex_bytes(body.as_str().unwrap_or(""))?) {
                    return fail("");
                }
            }
            "null" => need("None")?,
            "device" => {
                need("Device")?;
                let want = Device::new(
                    body[0].as_i64().unwrap_or(-1) as i32,
                    body[1].as_i64().unwrap_or(-1) as i32,
                );
                if actual != &Value::Device(want) {
                    return fail("");
                }
            }
            "dtype" => {
                need("str")?; // docs/abi-decisions.md: dtypes come back as their string form
                if actual != &Value::Str(body.as_str().unwrap_or("").to_owned()) {
                    return fail("");
                }
            }
            "any" => {
                if Some(actual.type_name()) != body.as_str() {
                    return fail("");
                }
            }
            "same_as_arg" | "var" => {
                let want = if tag == "var" {
                    self.var(body.as_str().unwrap_or(""))?
                } else {
                    let i = body.as_u64().unwrap_or(u64::MAX) as usize;
                    args.get(i)
                        .ok_or_else(|| format!("{path}: same_as_arg {i} out of range"))?
                };
                if actual.type_name() != want.type_name() {
                    return fail(&format!("type differs from {}", describe(want)));
                }
                match (want.handle(), actual.handle(), want, actual) {
                    (Some(w), Some(a), _, _) if w != a => return fail("not the same handle"),
                    (Some(_), Some(_), _, _) => {}
                    (_, _, Value::Float(w), Value::Float(a)) if w.to_bits() != a.to_bits() => {
                        return fail("")
                    }
                    (_, _, Value::Float(_), Value::Float(_)) => {}
                    _ if actual != want => return fail(""),
                    _ => {}
                }
            }
            "array" => {
                let Value::Array(a) = actual else {
                    return fail("not an Array");
                };
                let items = body.as_array().ok_or("bad array expectation")?;
                let n = a.len().map_err(|e| e.to_string())?;
                if n != items.len() {
                    return fail(&format!("size {n}"));
                }
                for (i, item) in items.iter().enumerate() {
                    let got = a.get(i).map_err(|e| format!("{path}[{i}]: {e}"))?;
                    self.expect(item, &got, args, &format!("{path}[{i}]"))?;
                }
            }
            "map" => {
                let Value::Map(m) = actual else {
                    return fail("not a Map");
                };
                let items = body.as_array().ok_or("bad map expectation")?;
                let n = m.len().map_err(|e| e.to_string())?;
                if n != items.len() {
                    return fail(&format!("size {n}"));
                }
                for kv in items {
                    let key = self.build(&kv[0])?;
                    let got = match m.get(&key) {
                        Ok(v) => v,
                        Err(e) => return fail(&format!("looking up key {}: {e}", kv[0])),
                    };
                    self.expect(&kv[1], &got, args, &format!("{path}[{}]", kv[0]))?;
                }
            }
            "shape" => {
                let Value::Shape(got) = actual else {
                    return fail("not a Shape");
                };
                if got.as_slice() != shape_dims(body)?.as_slice() {
                    return fail("dimensions differ");
                }
            }
            "ndarray" => {
                let Value::NDArray(nd) = actual else {
                    return fail("not an NDArray");
                };
                let (dtype, shape, bytes) = ndarray_bytes(body)?;
                if nd.dtype() != dtype {
                    return fail("dtype differs");
                }
                if nd.shape() != shape.as_slice() {
                    return fail("shape differs");
                }
                let got = nd.to_bytes().map_err(|e| e.to_string())?;
                if got != bytes {
                    return fail("data differs");
                }
            }
            other => return Err(format!("{path}: unknown expectation tag {other}")),
        }
        Ok(())
    }

    fn expect_error(spec: &Json, e: &polyffi::Error) -> Outcome {
        let text = format!("{e:?}");
        let fail = |why: &str| Err(format!("expected error {spec} but got {text:?} ({why})"));
        if let Some(kind) = spec.get("kind").and_then(Json::as_str) {
            if e.kind() != kind {
                return fail("kind");
            }
        }
        if let Some(message) = spec.get("message").and_then(Json::as_str) {
            if e.message() != message {
                return fail("message");
            }
        }
        if let Some(part) = spec.get("contains").and_then(Json::as_str) {
            if !text.contains(part) {
                return fail("text");
            }
        }
        Ok(())
    }

    fn run_call(&mut self, step: &Json, function: Value) -> Outcome {
        let Value::Function(f) = function else {
            return Err(format!("callee is not a function: {}", describe(&function)));
        };
        let args = step["args"]
            .as_array()
            .map(|a| a.iter().map(|x| self.build(x)).collect::<Outcome<Vec<_>>>())
            .unwrap_or_else(|| Ok(Vec::new()))?;
        let result = if step.get("async").and_then(Json::as_bool) == Some(true) {
            // The core's async pool: Function::call_async, driven by a runtime-free block_on.
            f.call_async(&args).and_then(block_on)
        } else {
            f.call(&args)
        };
        drop(f);
        match (result, step.get("expect_error")) {
            (Err(e), Some(spec)) => Self::expect_error(spec, &e),
            (Err(e), None) => Err(format!("call failed: {e:?}")),
            (Ok(v), Some(spec)) => Err(format!(
                "expected error {spec} but the call returned {}",
                describe(&v)
            )),
            (Ok(v), None) => {
                if let Some(expect) = step.get("expect") {
                    self.expect(expect, &v, &args, "result")?;
                }
                drop(args);
                if let Some(name) = step.get("bind").and_then(Json::as_str) {
                    self.vars.insert(name.to_owned(), v);
                }
                Ok(())
            }
        }
    }

    fn run_step(&mut self, step: &Json) -> Outcome {
        let s = |key: &str| step.get(key);
        if let Some(name) = s("call") {
            let f =
                Function::global(name.as_str().ok_or("bad call")?).map_err(|e| e.to_string())?;
            self.run_call(step, Value::Function(f))
        } else if let Some(v) = s("call_value") {
            let f = self.build(v)?;
            self.run_call(step, f)
        } else if let Some(spec) = s("module_call") {
            let f = self.module_function(spec, true)?.unwrap();
            self.run_call(step, Value::Function(f))
        } else if let Some(name) = s("let") {
            let v = self.build(&step["value"])?;
            self.vars
                .insert(name.as_str().ok_or("bad let")?.to_owned(), v);
            Ok(())
        } else if let Some(name) = s("release") {
            let name = name.as_str().ok_or("bad release")?;
            self.vars
                .remove(name)
                .map(drop)
                .ok_or_else(|| format!("release of unbound variable {name}"))
        } else if let Some(name) = s("register") {
            let name = name.as_str().ok_or("bad register")?;
            let Value::Function(f) = self.build(&step["value"])? else {
                return Err("register needs a function".into());
            };
            let override_ = s("override").and_then(Json::as_bool).unwrap_or(false);
            match (f.register_global(name, override_), s("expect_error")) {
                (Err(e), Some(spec)) => Self::expect_error(spec, &e),
                (Err(e), None) => Err(format!("register failed: {e}")),
                (Ok(()), spec) => {
                    self.registered.push(name.to_owned());
                    match spec {
                        Some(_) => Err(format!("register {name} succeeded")),
                        None => Ok(()),
                    }
                }
            }
        } else if let Some(name) = s("remove") {
            polyffi::remove_global(name.as_str().ok_or("bad remove")?).map_err(|e| e.to_string())
        } else if let Some(name) = s("exists") {
            let name = name.as_str().ok_or("bad exists")?;
            let found = Function::get_global(name).is_some();
            if Some(found) != step["expect"].as_bool() {
                return Err(format!(
                    "get_global({name:?}) {}",
                    if found { "found it" } else { "did not find it" }
                ));
            }
            Ok(())
        } else if let Some(name) = s("listed") {
            let name = name.as_str().ok_or("bad listed")?;
            let names = polyffi::list_global_names().map_err(|e| e.to_string())?;
            let found = names.iter().any(|n| n == name);
            if Some(found) != step["expect"].as_bool() {
                return Err(format!(
                    "list_global_names {} {name} ({} names)",
                    if found { "lists" } else { "does not list" },
                    names.len()
                ));
            }
            Ok(())
        } else if let Some(n) = s("host_live") {
            let live = host_live(self.serial)?;
            if Some(live) != n.as_i64() {
                return Err(format!("host callables alive: {live}, want {n}"));
            }
            Ok(())
        } else if let Some(name) = s("load_module") {
            let name = name.as_str().ok_or("bad load_module")?;
            match (self.load_module(name), s("expect_error")) {
                (Err(e), Some(spec)) => Self::expect_error(spec, &e),
                (Err(e), None) => Err(format!("load failed: {e}")),
                (Ok(_), Some(_)) => Err("loading the module succeeded".into()),
                (Ok(m), None) => {
                    match s("bind").and_then(Json::as_str) {
                        Some(var) => {
                            self.vars.insert(var.to_owned(), Value::Module(m));
                        }
                        None => self.modules.push(m),
                    }
                    Ok(())
                }
            }
        } else if let Some(spec) = s("import") {
            let m = self.resolve_module(&spec["module"])?;
            let dep = self.resolve_module(&spec["dep"])?;
            m.import(&dep).map_err(|e| e.to_string())
        } else if let Some(spec) = s("module_get") {
            let f = self.module_function(spec, false)?;
            if let Some(want) = s("expect").and_then(Json::as_bool) {
                if f.is_some() != want {
                    return Err(format!(
                        "get_function {} {spec}",
                        if f.is_some() { "found" } else { "did not find" }
                    ));
                }
            }
            if let Some(var) = s("bind").and_then(Json::as_str) {
                let f = f.ok_or("module_get found nothing to bind")?;
                self.vars.insert(var.to_owned(), Value::Function(f));
            }
            Ok(())
        } else {
            Err(format!("unknown step {step}"))
        }
    }

    fn cleanup(&mut self) {
        self.vars.clear();
        self.modules.clear();
        for name in self.registered.drain(..) {
            let _ = polyffi::remove_global(&name);
        }
    }
}

fn run_case(case: &Json, lib_dir: PathBuf) -> Outcome {
    let serial = CURRENT_CASE.fetch_add(1, Ordering::SeqCst) + 1;
    let mut run = CaseRun {
        lib_dir,
        serial,
        vars: HashMap::new(),
        modules: Vec::new(),
        registered: Vec::new(),
    };
    let single = [case.clone()];
    let (steps, multi) = match case.get("steps").and_then(Json::as_array) {
        Some(steps) => (steps.as_slice(), true),
        None => (&single[..], false),
    };
    let mut message = None;
    for (i, step) in steps.iter().enumerate() {
        if let Err(e) = run.run_step(step) {
            message = Some(if multi { format!("step {i}: {e}") } else { e });
            break;
        }
    }
    run.cleanup();
    drop(run);
    if let Some(m) = message {
        return Err(m);
    }
    match host_live(serial)? {
        0 => Ok(()),
        n => Err(format!(
            "after the case: {n} host callable(s) never finalized"
        )),
    }
}

// ---- Harness ----------------------------------------------------------------------------------

fn read_json(path: &std::path::Path) -> Json {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn main() {
    let mut args = Arguments::from_args();
    // Cases share the registry and the live-object count: one at a time, in file order.
    args.test_threads = Some(1);
    let conformance = common::repo_root().join("tests/conformance");
    let mut files: Vec<PathBuf> = std::fs::read_dir(conformance.join("cases"))
        .expect("tests/conformance/cases")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let cases: Vec<Json> = files
        .iter()
        .flat_map(|p| read_json(p)["cases"].as_array().cloned().unwrap())
        .collect();
    let caps = conformance.join("capabilities/rust.json");
    let unsupported: BTreeMap<String, String> = if caps.exists() {
        serde_json::from_value(read_json(&caps)["unsupported"].clone()).unwrap_or_default()
    } else {
        BTreeMap::new()
    };

    common::testing();
    let live_objects = Function::global("testing.live_objects").unwrap();
    let live_at_start: i64 = live_objects.invoke(()).unwrap();
    let results: Arc<Mutex<BTreeMap<String, &'static str>>> = Arc::default();

    let trials = cases
        .iter()
        .map(|case| {
            let id = case["id"].as_str().unwrap().to_owned();
            let case = case.clone();
            let reason = unsupported.get(&id).cloned();
            let results = results.clone();
            let lib_dir = common::lib_dir();
            Trial::test(id.clone(), move || {
                let outcome = run_case(&case, lib_dir);
                let (status, result) = match (outcome, reason) {
                    (Ok(()), Some(r)) => (
                        "fail",
                        Err(format!(
                            "{id} is listed as unsupported ({r}) but now passes"
                        )),
                    ),
                    (Err(_), Some(_)) => ("skip", Ok(())),
                    (Ok(()), None) => ("pass", Ok(())),
                    (Err(e), None) => ("fail", Err(e)),
                };
                results.lock().unwrap().insert(id, status);
                result.map_err(Failed::from)
            })
        })
        .collect();

    let listing = args.list;
    let filtered = args.filter.is_some() || !args.skip.is_empty() || args.exact;
    let conclusion = libtest_mimic::run(&args, trials);
    if listing {
        conclusion.exit();
    }

    // Leak check: threads the fixtures started to drop references are joined first.
    let mut leak_failed = false;
    if let Some(join) = Function::get_global("testing.join_release_threads") {
        join.call(&[]).unwrap();
    }
    let live: i64 = live_objects.invoke(()).unwrap();
    if live != live_at_start {
        eprintln!("leak check FAILED: testing.live_objects() {live}, was {live_at_start}");
        leak_failed = true;
    } else {
        println!("leak check: testing.live_objects() back to {live_at_start}");
    }

    if filtered {
        println!("(filtered run: build/conformance/rust.json not written)");
    } else {
        let out_dir = std::env::var_os("POLYFFI_CONFORMANCE_OUT")
            .map(PathBuf::from)
            .unwrap_or_else(|| common::repo_root().join("build/conformance"));
        std::fs::create_dir_all(&out_dir).unwrap();
        let results = results.lock().unwrap();
        let mut text = String::from("{\n");
        for (i, case) in cases.iter().enumerate() {
            let id = case["id"].as_str().unwrap();
            let status = results.get(id).copied().unwrap_or("fail");
            let comma = if i + 1 < cases.len() { "," } else { "" };
            text.push_str(&format!(" {}: \"{status}\"{comma}\n", Json::from(id)));
        }
        text.push_str("}\n");
        std::fs::write(out_dir.join("rust.json"), text).unwrap();
        println!("wrote {}", out_dir.join("rust.json").display());
    }
    if leak_failed {
        std::process::exit(101);
    }
    conclusion.exit();
}

/// Waits for a future on this thread (the async cases need no runtime: the core's completion
/// wakes the thread).
fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}
