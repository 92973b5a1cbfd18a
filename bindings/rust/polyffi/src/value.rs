//! Values that cross the boundary: [`Value`] and its conversions, [`Device`], [`DataType`],
//! [`Shape`], and the object handles [`Object`], [`Array`], [`Map`]. All conversion between `TVMValue` + type
//! code and Rust lives here: arguments ([`ToArg`], [`IntoArgs`]) and results ([`FromRet`]).
use std::ffi::{c_void, CStr, CString};
use std::fmt;
use std::ops::Deref;
use std::os::raw::c_int;
use std::ptr::NonNull;
use std::str::FromStr;
use std::sync::OnceLock;

use polyffi_sys as sys;
use sys::TVMValue;

use crate::errors::{check_call, Error, Result};
pub(crate) use crate::handle::{
    core_global, BOOL, BYTES, DEVICE, DLTENSOR, DTYPE, FLOAT, FUNC, INT, MODULE, NDARRAY, NULL,
    OBJECT, OPAQUE, RVALUE_REF, STR, UINT,
};
use crate::handle::{Function, Module, NDArray};

/// The name error messages give a type code (`int`, `float`, `NDArray`, ...): the core's
/// (`polyffi.TypeCodeName`, looked up once), so a mismatch reads as in every other binding.
pub fn type_code_name(code: c_int) -> String {
    core_global!("polyffi.TypeCodeName")
        .and_then(|f| f.invoke::<String>((i64::from(code),)))
        .unwrap_or_else(|_| format!("type code {code}"))
}

// ---- Device and DataType ---------------------------------------------------------------------

/// A DLPack device: type (1 = CPU) and id.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    pub device_type: i32,
    pub device_id: i32,
}

impl Device {
    pub const fn new(device_type: i32, device_id: i32) -> Self {
        Device {
            device_type,
            device_id,
        }
    }

    /// The CPU device `id` (DLPack `kDLCPU`).
    pub const fn cpu(device_id: i32) -> Self {
        Device {
            device_type: sys::kDLCPU as i32,
            device_id,
        }
    }

    pub(crate) fn to_raw(self) -> sys::DLDevice {
        sys::DLDevice {
            device_type: self.device_type as _,
            device_id: self.device_id,
        }
    }

    pub(crate) fn from_raw(d: sys::DLDevice) -> Self {
        Device {
            device_type: d.device_type as i32,
            device_id: d.device_id,
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.device_type {
            1 => "cpu",
            2 => "cuda",
            3 => "cuda_host",
            4 => "opencl",
            7 => "vulkan",
            8 => "metal",
            10 => "rocm",
            _ => return write!(f, "device({}, {})", self.device_type, self.device_id),
        };
        write!(f, "{}:{}", name, self.device_id)
    }
}

/// A DLPack data type: code, bits, lanes. Parsed from and printed as `"float32"`, `"int8x4"`,
/// `"bool"`, `"handle"` exactly as the runtime spells them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

impl DataType {
    pub const fn new(code: u8, bits: u8, lanes: u16) -> Self {
        DataType { code, bits, lanes }
    }
    pub const INT32: DataType = DataType::new(sys::kDLInt as u8, 32, 1);
    pub const INT64: DataType = DataType::new(sys::kDLInt as u8, 64, 1);
    pub const FLOAT32: DataType = DataType::new(sys::kDLFloat as u8, 32, 1);
    pub const FLOAT64: DataType = DataType::new(sys::kDLFloat as u8, 64, 1);
    pub const BOOL: DataType = DataType::new(sys::kDLBool as u8, 8, 1);

    /// Parses `int|uint|float|bfloat` with optional bits (default 32; bfloat 16), `bool`
    /// (8 bits) or `handle` (64 bits), each with an optional `xLANES`; ValueError otherwise.
    /// The core parses (`polyffi.DataTypeFromString`, looked up once): one spelling for every
    /// binding.
    pub fn parse(s: &str) -> Result<DataType> {
        let packed: i64 = core_global!("polyffi.DataTypeFromString")?.invoke((s,))?;
        Ok(DataType {
            code: (packed & 0xff) as u8,
            bits: ((packed >> 8) & 0xff) as u8,
            lanes: ((packed >> 16) & 0xffff) as u16,
        })
    }

    /// Bytes per element (all lanes).
    pub fn size_bytes(&self) -> usize {
        (self.bits as usize * self.lanes as usize).div_ceil(8)
    }

    pub(crate) fn to_raw(self) -> sys::DLDataType {
        sys::DLDataType {
            code: self.code,
            bits: self.bits,
            lanes: self.lanes,
        }
    }

    pub(crate) fn from_raw(t: sys::DLDataType) -> Self {
        DataType {
            code: t.code,
            bits: t.bits,
            lanes: t.lanes,
        }
    }
}

/// The core's spelling (`runtime.DLDataType2String`, looked up once). A dtype with no string
/// form that would read back as itself prints as `<dtype CODE:BITSxLANES>`, as in the C
/// bindings, which no parser accepts.
impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let printed = core_global!("runtime.DLDataType2String")
            .and_then(|g| g.invoke::<String>((Value::DataType(*self),)));
        match printed {
            Ok(text) => f.write_str(&text),
            Err(_) => write!(f, "<dtype {}:{}x{}>", self.code, self.bits, self.lanes),
        }
    }
}

impl FromStr for DataType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        DataType::parse(s)
    }
}

// ---- Objects ----------------------------------------------------------------------------------

/// A counted reference to a runtime object (Clone = retain, Drop = release).
pub struct Object {
    handle: NonNull<c_void>,
}

// SAFETY: runtime objects are reference counted atomically and usable from any thread
// (docs/spec/abi.md section 8, threads).
unsafe impl Send for Object {}
unsafe impl Sync for Object {}

impl Object {
    /// Takes over an owned object reference.
    ///
    /// # Safety
    /// `handle` must be an owned reference to a runtime object.
    pub unsafe fn from_raw(handle: NonNull<c_void>) -> Self {
        Object { handle }
    }

    /// The handle, still owned by `self`.
    pub fn as_raw(&self) -> *mut c_void {
        self.handle.as_ptr()
    }

    /// Gives up ownership of the handle.
    pub fn into_raw(self) -> *mut c_void {
        let h = self.handle.as_ptr();
        std::mem::forget(self);
        h
    }

    /// The runtime type index.
    pub fn type_index(&self) -> Result<u32> {
        let mut index = 0;
        // SAFETY: live handle, out-parameter.
        check_call(unsafe { sys::TVMObjectGetTypeIndex(self.as_raw(), &mut index) })?;
        Ok(index)
    }

    /// The registered type key, e.g. `"Array"`.
    pub fn type_key(&self) -> Result<String> {
        let index = self.type_index()?;
        let mut key: *mut std::os::raw::c_char = std::ptr::null_mut();
        // SAFETY: out-parameter receives thread-local storage, copied at once.
        check_call(unsafe { sys::TVMObjectTypeIndex2Key(index, &mut key) })?;
        Ok(unsafe { CStr::from_ptr(key) }
            .to_string_lossy()
            .into_owned())
    }
}

impl Clone for Object {
    fn clone(&self) -> Self {
        // SAFETY: live handle; retain cannot fail for a valid one.
        unsafe { sys::TVMObjectRetain(self.as_raw()) };
        Object {
            handle: self.handle,
        }
    }
}

impl Drop for Object {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { sys::TVMObjectFree(self.as_raw()) };
    }
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self.type_key().unwrap_or_else(|_| "?".into());
        write!(f, "Object({key} @ {:p})", self.handle)
    }
}

/// Type indexes of the objects that convert to native values, looked up once.
struct KnownTypes {
    string: Option<u32>,
    shape: Option<u32>,
    array: Option<u32>,
    map: Option<u32>,
}

fn known_types() -> &'static KnownTypes {
    static KNOWN: OnceLock<KnownTypes> = OnceLock::new();
    KNOWN.get_or_init(|| {
        let index = |key: &CStr| {
            let mut out = 0;
            // SAFETY: key is NUL-terminated; out-parameter.
            (unsafe { sys::TVMObjectTypeKey2Index(key.as_ptr(), &mut out) } == 0).then_some(out)
        };
        KnownTypes {
            string: index(c"runtime.String"),
            shape: index(c"runtime.ShapeTuple"),
            array: index(c"Array"),
            map: index(c"Map"),
        }
    })
}

/// A shape: TVM's `runtime.ShapeTuple` (`ffi.Shape` in TVM 0.27) as the dimensions themselves.
///
/// Every ShapeTuple a call returns arrives as [`Value::Shape`]; a `Shape` derefs to `&[i64]`
/// (`len`, indexing, iteration). Pass one as an argument (or in a [`Value`]) and the callee gets
/// a `runtime.ShapeTuple`; a `Vec<i64>` or `&[i64]` becomes one with `Shape::from`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Shape(Vec<i64>);

impl Shape {
    pub fn new(dims: impl Into<Vec<i64>>) -> Shape {
        Shape(dims.into())
    }
    pub fn as_slice(&self) -> &[i64] {
        &self.0
    }
    pub fn into_vec(self) -> Vec<i64> {
        self.0
    }
    /// Builds the runtime object, `runtime.ShapeTuple(dims...)`.
    pub fn to_object(&self) -> Result<Object> {
        crate::library::ensure()?;
        let f = core_global!("runtime.ShapeTuple")?;
        let mut values: Vec<TVMValue> = self.0.iter().map(|&d| TVMValue { v_int64: d }).collect();
        let mut codes = vec![INT; self.0.len()];
        let n = c_int::try_from(values.len())
            .map_err(|_| Error::value_error("a Shape with more than 2^31 dimensions"))?;
        let mut ret = TVMValue { v_int64: 0 };
        let mut ret_code: c_int = NULL;
        // SAFETY: n int arguments in values/codes; ret/ret_code are out-parameters. Through
        // the one call path every function call of this crate takes (call_slot).
        check_call(unsafe { f.call_slot(&mut values, &mut codes, n, &mut ret, &mut ret_code) })?;
        // SAFETY: the owned result of the call just made; taken over (and so freed) here.
        match (ret_code, NonNull::new(unsafe { ret.v_handle })) {
            (OBJECT, Some(h)) => Ok(unsafe { Object::from_raw(h) }),
            _ => {
                let got = unsafe { Value::from_raw_owned(ret, ret_code) }?;
                Err(Error::type_error(format!(
                    "runtime.ShapeTuple returned {}",
                    got.type_name()
                )))
            }
        }
    }
    /// Reads a `runtime.ShapeTuple` object in one call (`runtime.ShapeTupleBytes`).
    fn from_object(obj: &Object) -> Result<Shape> {
        let f = core_global!("runtime.ShapeTupleBytes")?;
        match f.invoke::<Value>((obj,))? {
            Value::Bytes(b) if b.len() % 8 == 0 => Ok(Shape(
                b.chunks_exact(8)
                    .map(|c| i64::from_ne_bytes(c.try_into().expect("8 bytes")))
                    .collect(),
            )),
            other => Err(Error::type_error(format!(
                "runtime.ShapeTupleBytes returned {}",
                other.type_name()
            ))),
        }
    }
}

impl Deref for Shape {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        &self.0
    }
}

impl From<Vec<i64>> for Shape {
    fn from(v: Vec<i64>) -> Shape {
        Shape(v)
    }
}

impl From<&[i64]> for Shape {
    fn from(v: &[i64]) -> Shape {
        Shape(v.to_vec())
    }
}

impl<const N: usize> From<[i64; N]> for Shape {
    fn from(v: [i64; N]) -> Shape {
        Shape(v.to_vec())
    }
}

impl From<Shape> for Vec<i64> {
    fn from(s: Shape) -> Vec<i64> {
        s.0
    }
}

impl PartialEq<[i64]> for Shape {
    fn eq(&self, other: &[i64]) -> bool {
        self.0 == other
    }
}

impl<const N: usize> PartialEq<[i64; N]> for Shape {
    fn eq(&self, other: &[i64; N]) -> bool {
        self.0 == other
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Shape({:?})", self.0)
    }
}

/// A runtime `Array` (immutable; items are any values).
#[derive(Clone, Debug)]
pub struct Array(Object);

impl Array {
    /// Builds `runtime.Array(items...)`.
    pub fn new(items: &[Value]) -> Result<Array> {
        crate::library::ensure()?;
        match core_global!("runtime.Array")?.call(items)? {
            Value::Array(a) => Ok(a),
            other => Err(Error::type_error(format!(
                "runtime.Array returned {}",
                other.type_name()
            ))),
        }
    }
    pub fn len(&self) -> Result<usize> {
        core_global!("runtime.ArraySize")?
            .invoke::<i64>((self,))
            .map(|n| n as usize)
    }
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Item `i`; IndexError when out of range.
    pub fn get(&self, i: usize) -> Result<Value> {
        core_global!("runtime.ArrayGetItem")?.invoke::<Value>((self, i as i64))
    }
    /// All items, in order.
    pub fn to_vec(&self) -> Result<Vec<Value>> {
        (0..self.len()?).map(|i| self.get(i)).collect()
    }
    pub fn as_object(&self) -> &Object {
        &self.0
    }
}

/// A runtime `Map` (immutable; keys are strings, ints or objects by identity).
#[derive(Clone, Debug)]
pub struct Map(Object);

impl Map {
    /// Builds `runtime.Map(k0, v0, ...)`.
    pub fn new(items: &[(Value, Value)]) -> Result<Map> {
        crate::library::ensure()?;
        let flat: Vec<Value> = items
            .iter()
            .flat_map(|(k, v)| [k.clone(), v.clone()])
            .collect();
        match core_global!("runtime.Map")?.call(&flat)? {
            Value::Map(m) => Ok(m),
            other => Err(Error::type_error(format!(
                "runtime.Map returned {}",
                other.type_name()
            ))),
        }
    }
    pub fn len(&self) -> Result<usize> {
        core_global!("runtime.MapSize")?
            .invoke::<i64>((self,))
            .map(|n| n as usize)
    }
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }
    /// The value under `key`; KeyError when absent.
    pub fn get<K: ToArg>(&self, key: K) -> Result<Value> {
        core_global!("runtime.MapGetItem")?.invoke::<Value>((self, key))
    }
    pub fn contains<K: ToArg>(&self, key: K) -> Result<bool> {
        core_global!("runtime.MapCount")?
            .invoke::<i64>((self, key))
            .map(|n| n != 0)
    }
    /// `(key, value)` pairs in insertion order.
    pub fn items(&self) -> Result<Vec<(Value, Value)>> {
        let flat = match core_global!("runtime.MapItems")?.invoke::<Value>((self,))? {
            Value::Array(a) => a.to_vec()?,
            other => {
                return Err(Error::type_error(format!(
                    "MapItems gave {}",
                    other.type_name()
                )))
            }
        };
        let mut it = flat.into_iter();
        let mut out = Vec::new();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            out.push((k, v));
        }
        Ok(out)
    }
    pub fn as_object(&self) -> &Object {
        &self.0
    }
}

// ---- Value ------------------------------------------------------------------------------------

/// Any value the runtime can pass or return.
#[derive(Clone, Debug)]
pub enum Value {
    Null,
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    Bytes(Vec<u8>),
    Device(Device),
    DataType(DataType),
    Function(Function),
    Module(Module),
    NDArray(NDArray),
    Array(Array),
    Map(Map),
    /// A `runtime.ShapeTuple`, by value.
    Shape(Shape),
    Object(Object),
    /// A raw pointer passed through untouched (kTVMOpaqueHandle); never dereferenced here.
    OpaqueHandle(usize),
}

impl Value {
    /// The type name used in error messages: `int`, `float`, `str`, `Function`, ...
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "None",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Bool(_) => "bool",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::Device(_) => "Device",
            Value::DataType(_) => "dtype",
            Value::Function(_) => "Function",
            Value::Module(_) => "Module",
            Value::NDArray(_) => "NDArray",
            Value::Shape(_) => "Shape",
            Value::Array(_) | Value::Map(_) | Value::Object(_) => "Object",
            Value::OpaqueHandle(_) => "handle",
        }
    }

    /// The object handle for objects (identity), None for plain values.
    pub fn handle(&self) -> Option<*mut c_void> {
        match self {
            Value::Function(f) => Some(f.as_raw()),
            Value::Module(m) => Some(m.as_raw()),
            Value::NDArray(a) => Some(a.as_raw() as *mut c_void),
            Value::Array(a) => Some(a.0.as_raw()),
            Value::Map(m) => Some(m.0.as_raw()),
            Value::Object(o) => Some(o.as_raw()),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Converts an owned result (`TVMFuncCall`'s out-values): objects are taken over, strings and
    /// bytes (thread-local) are copied. A uint reads as an int and a dtype as its string form,
    /// as `TVMFuncCall` hands them on (docs/abi-decisions.md), also when they arrive raw from a
    /// direct callee's entry.
    ///
    /// # Safety
    /// `v` and `code` must be a result the runtime just handed out, owned by the caller.
    pub unsafe fn from_raw_owned(v: TVMValue, code: c_int) -> Result<Value> {
        Ok(match code {
            NULL => Value::Null,
            INT | UINT => Value::Int(v.v_int64),
            BOOL => Value::Bool(v.v_int64 != 0),
            FLOAT => Value::Float(v.v_float64),
            STR => string_value(CStr::from_ptr(v.v_str).to_bytes()),
            BYTES => {
                let arr = &*(v.v_handle as *const sys::TVMByteArray);
                Value::Bytes(bytes_of(arr).to_vec())
            }
            DTYPE => dtype_result(v.v_type),
            DEVICE => Value::Device(Device::from_raw(v.v_device)),
            OPAQUE => match v.v_handle as usize {
                0 => Value::Null,
                p => Value::OpaqueHandle(p),
            },
            OBJECT => match NonNull::new(v.v_handle) {
                None => Value::Null,
                Some(h) => object_value(Object::from_raw(h))?,
            },
            MODULE => match NonNull::new(v.v_handle) {
                None => Value::Null,
                Some(h) => Value::Module(Module::from_raw(h)),
            },
            FUNC => match NonNull::new(v.v_handle) {
                None => Value::Null,
                Some(h) => Value::Function(Function::from_raw(h)),
            },
            NDARRAY => match NonNull::new(v.v_handle as *mut sys::DLTensor) {
                None => Value::Null,
                Some(h) => Value::NDArray(NDArray::from_raw(h)),
            },
            DLTENSOR => match NonNull::new(v.v_handle as *mut sys::DLTensor) {
                None => Value::Null,
                Some(h) => Value::NDArray(NDArray::from_borrowed(h)),
            },
            other => return Err(Error::type_error(format!("unknown type code {other}"))),
        })
    }

    /// Converts a callback argument (borrowed): objects get their own reference first.
    ///
    /// # Safety
    /// `v` and `code` must be an argument the runtime passed to a callback that is running.
    pub unsafe fn from_raw_borrowed(mut v: TVMValue, mut code: c_int) -> Result<Value> {
        if code == DTYPE {
            return Ok(Value::DataType(DataType::from_raw(v.v_type)));
        }
        if matches!(code, OBJECT | MODULE | FUNC | NDARRAY | RVALUE_REF) {
            check_call(sys::TVMCbArgToReturn(&mut v, &mut code))?;
        }
        Value::from_raw_owned(v, code)
    }
}

/// A dtype result as the string `TVMFuncCall` would have made of it (a direct callee's entry
/// hands the dtype on raw).
#[cold]
#[inline(never)]
fn dtype_result(t: sys::DLDataType) -> Value {
    Value::Str(DataType::from_raw(t).to_string())
}

fn string_value(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(s) => Value::Str(s.to_owned()),
        Err(_) => Value::Bytes(bytes.to_vec()),
    }
}

unsafe fn bytes_of(arr: &sys::TVMByteArray) -> &[u8] {
    if arr.size == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(arr.data as *const u8, arr.size)
    }
}

/// Objects with a native counterpart become it (runtime.String, Array, Map).
fn object_value(obj: Object) -> Result<Value> {
    let index = obj.type_index()?;
    let known = known_types();
    if Some(index) == known.string {
        let f = core_global!("runtime.StringBytes")?;
        return match f.invoke::<Value>((&obj,))? {
            Value::Bytes(b) => Ok(match String::from_utf8(b) {
                Ok(s) => Value::Str(s),
                Err(e) => Value::Bytes(e.into_bytes()),
            }),
            v @ Value::Str(_) => Ok(v),
            other => Err(Error::type_error(format!(
                "StringBytes returned {}",
                other.type_name()
            ))),
        };
    }
    if Some(index) == known.shape {
        return Shape::from_object(&obj).map(Value::Shape);
    }
    if Some(index) == known.array {
        return Ok(Value::Array(Array(obj)));
    }
    if Some(index) == known.map {
        return Ok(Value::Map(Map(obj)));
    }
    Ok(Value::Object(obj))
}

impl PartialEq for Value {
    /// Plain values by value (floats with `==`), objects by identity.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Bytes(a), Value::Bytes(b)) => a == b,
            (Value::Device(a), Value::Device(b)) => a == b,
            (Value::DataType(a), Value::DataType(b)) => a == b,
            (Value::Shape(a), Value::Shape(b)) => a == b,
            (Value::OpaqueHandle(a), Value::OpaqueHandle(b)) => a == b,
            _ => match (self.handle(), other.handle()) {
                (Some(a), Some(b)) => a == b && self.type_name() == other.type_name(),
                _ => false,
            },
        }
    }
}

macro_rules! value_from {
    ($($t:ty => |$x:ident| $e:expr),* $(,)?) => {$(
        impl From<$t> for Value {
            fn from($x: $t) -> Value { $e }
        }
    )*};
}

value_from! {
    () => |_x| Value::Null,
    i64 => |x| Value::Int(x),
    i32 => |x| Value::Int(x.into()),
    i16 => |x| Value::Int(x.into()),
    i8 => |x| Value::Int(x.into()),
    u32 => |x| Value::Int(x.into()),
    u16 => |x| Value::Int(x.into()),
    u8 => |x| Value::Int(x.into()),
    f64 => |x| Value::Float(x),
    f32 => |x| Value::Float(x.into()),
    bool => |x| Value::Bool(x),
    &str => |x| Value::Str(x.to_owned()),
    String => |x| Value::Str(x),
    &String => |x| Value::Str(x.clone()),
    &[u8] => |x| Value::Bytes(x.to_vec()),
    Vec<u8> => |x| Value::Bytes(x),
    Device => |x| Value::Device(x),
    DataType => |x| Value::DataType(x),
    Function => |x| Value::Function(x),
    &Function => |x| Value::Function(x.clone()),
    Module => |x| Value::Module(x),
    NDArray => |x| Value::NDArray(x),
    Array => |x| Value::Array(x),
    Map => |x| Value::Map(x),
    Object => |x| Value::Object(x),
    Shape => |x| Value::Shape(x),
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(x: Option<T>) -> Value {
        x.map_or(Value::Null, Into::into)
    }
}

impl TryFrom<u64> for Value {
    type Error = Error;
    fn try_from(x: u64) -> Result<Value> {
        i64::try_from(x)
            .map(Value::Int)
            .map_err(|_| Error::new("OverflowError", format!("{x} does not fit in int64")))
    }
}

fn mismatch(want: &str, got: &Value) -> Error {
    Error::type_error(format!("expected {want} but got {}", got.type_name()))
}

macro_rules! value_try_into {
    ($($t:ty, $want:literal => |$v:ident| $($pat:pat => $e:expr),+ );* $(;)?) => {$(
        impl TryFrom<Value> for $t {
            type Error = Error;
            fn try_from($v: Value) -> Result<$t> {
                match $v {
                    $($pat => Ok($e),)+
                    other => Err(mismatch($want, &other)),
                }
            }
        }
    )*};
}

value_try_into! {
    i64, "int" => |v| Value::Int(x) => x;
    f64, "float" => |v| Value::Float(x) => x, Value::Int(x) => x as f64, Value::Bool(x) => x as i64 as f64;
    bool, "bool" => |v| Value::Bool(x) => x, Value::Int(x) => x != 0;
    String, "str" => |v| Value::Str(x) => x;
    Vec<u8>, "bytes" => |v| Value::Bytes(x) => x, Value::Str(x) => x.into_bytes();
    Device, "Device" => |v| Value::Device(x) => x;
    DataType, "dtype" => |v| Value::DataType(x) => x;
    Function, "Function" => |v| Value::Function(x) => x;
    Module, "Module" => |v| Value::Module(x) => x;
    NDArray, "NDArray" => |v| Value::NDArray(x) => x;
    Array, "Array" => |v| Value::Array(x) => x;
    Map, "Map" => |v| Value::Map(x) => x;
    Object, "Object" => |v| Value::Object(x) => x, Value::Array(x) => x.0, Value::Map(x) => x.0;
    Shape, "Shape" => |v| Value::Shape(x) => x;
    (), "None" => |v| Value::Null => ();
}

impl TryFrom<Value> for i32 {
    type Error = Error;
    fn try_from(v: Value) -> Result<i32> {
        let x = i64::try_from(v)?;
        i32::try_from(x)
            .map_err(|_| Error::new("OverflowError", format!("{x} does not fit in i32")))
    }
}

impl TryFrom<Value> for f32 {
    type Error = Error;
    fn try_from(v: Value) -> Result<f32> {
        f64::try_from(v).map(|x| x as f32)
    }
}

impl TryFrom<Value> for DataTypeOrString {
    type Error = Error;
    fn try_from(v: Value) -> Result<Self> {
        match v {
            Value::DataType(t) => Ok(DataTypeOrString(t)),
            Value::Str(s) => DataType::parse(&s).map(DataTypeOrString),
            other => Err(mismatch("dtype", &other)),
        }
    }
}

/// A dtype result, accepted as a dtype or as its string form (the runtime returns dtypes as
/// strings, docs/abi-decisions.md).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DataTypeOrString(pub DataType);

// ---- Arguments --------------------------------------------------------------------------------

/// `bytes` as UTF-8: ASCII is checked eight bytes at a time, anything else by `from_utf8`.
#[inline]
pub(crate) fn utf8(bytes: &[u8]) -> Option<&str> {
    let mut words = bytes.chunks_exact(8);
    let mut high = 0u64;
    for w in words.by_ref() {
        high |= u64::from_ne_bytes(w.try_into().expect("8 bytes"));
    }
    for &b in words.remainder() {
        high |= u64::from(b);
    }
    if high & 0x8080_8080_8080_8080 == 0 {
        // SAFETY: every byte is ASCII.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

/// Copies `s` (shorter than 64 bytes) into `buf` with a NUL after it and reports whether `s`
/// itself holds a NUL byte, eight bytes at a time inline: one pass that loads each word once,
/// checks it and stores it (a call to `memchr` or `memcpy` costs more than the whole work for a
/// short argument). The last word may overlap the one before it; every load stays inside `s`.
#[inline(always)]
fn copy_c_short(s: &[u8], buf: &mut [std::mem::MaybeUninit<u8>; 64]) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let n = s.len();
    debug_assert!(n < 64);
    let src = s.as_ptr();
    let dst = buf.as_mut_ptr() as *mut u8;
    let mut found = 0u64;
    // SAFETY: every read is inside s (n bytes), every write inside buf (n + 1 <= 64 bytes).
    unsafe {
        if n >= 8 {
            let mut word = |at: usize| {
                let x = (src.add(at) as *const u64).read_unaligned();
                // A high bit is set exactly when some byte of x is zero.
                found |= x.wrapping_sub(LOW) & !x & HIGH;
                (dst.add(at) as *mut u64).write_unaligned(x);
            };
            let mut at = 0;
            while at + 8 <= n {
                word(at);
                at += 8;
            }
            if at < n {
                word(n - 8);
            }
        } else {
            for i in 0..n {
                let b = *src.add(i);
                found |= u64::from(b == 0);
                *dst.add(i) = b;
            }
        }
        *dst.add(n) = 0;
    }
    found != 0
}

/// A NUL-terminated copy of a string argument: inline for short strings (no allocation), on the
/// heap for long ones, or a `runtime.String` object when the string holds NUL bytes.
pub enum StrHolder {
    Inline {
        buf: [std::mem::MaybeUninit<u8>; 64],
    },
    Heap(CString),
    Object(Object),
}

impl StrHolder {
    /// Inline (the short path is built where the caller keeps the holder); the rest out of line.
    #[inline(always)]
    fn new(s: &[u8]) -> Result<StrHolder> {
        if s.len() < 64 {
            // Made in place: the copy goes straight into the holder the call keeps.
            let mut holder = StrHolder::Inline {
                buf: [std::mem::MaybeUninit::<u8>::uninit(); 64],
            };
            if let StrHolder::Inline { buf } = &mut holder {
                if !copy_c_short(s, buf) {
                    return Ok(holder);
                }
            }
        }
        Self::new_slow(s)
    }

    /// [`new`](Self::new) into the caller's empty slot: a short string's copy is written where
    /// the holder stays.
    #[inline(always)]
    fn new_in(s: &[u8], slot: &mut Option<StrHolder>) -> Result<()> {
        if s.len() < 64 {
            let holder = slot.insert(StrHolder::Inline {
                buf: [std::mem::MaybeUninit::<u8>::uninit(); 64],
            });
            if let StrHolder::Inline { buf } = holder {
                if !copy_c_short(s, buf) {
                    return Ok(());
                }
            }
        }
        *slot = Some(Self::new_slow(s)?);
        Ok(())
    }

    /// A long string (a heap copy) or one with NUL bytes (an object).
    #[cold]
    #[inline(never)]
    fn new_slow(s: &[u8]) -> Result<StrHolder> {
        if s.contains(&0) {
            return Self::with_nul(s);
        }
        // SAFETY: checked above that s holds no NUL.
        Ok(StrHolder::Heap(unsafe {
            CString::from_vec_unchecked(s.to_vec())
        }))
    }

    /// A string with NUL bytes inside travels as a `runtime.String` object.
    #[cold]
    fn with_nul(s: &[u8]) -> Result<StrHolder> {
        let f = core_global!("runtime.String")?;
        f.invoke::<Object>((s,)).map(StrHolder::Object)
    }

    #[inline(always)]
    fn raw(&self) -> (TVMValue, c_int) {
        match self {
            StrHolder::Inline { buf } => (
                TVMValue {
                    v_str: buf.as_ptr() as *const _,
                },
                STR,
            ),
            StrHolder::Heap(c) => (TVMValue { v_str: c.as_ptr() }, STR),
            StrHolder::Object(o) => (
                TVMValue {
                    v_handle: o.as_raw(),
                },
                OBJECT,
            ),
        }
    }
}

/// Temporary storage a [`Value`] argument needs while the call runs.
pub enum ValueHolder {
    None,
    Str(StrHolder),
    Bytes(sys::TVMByteArray),
    /// An object made for the call (a Shape's runtime.ShapeTuple), released after it.
    Object(Object),
}

/// One argument of a call. `prepare` makes whatever the C side needs to outlive the call
/// (a NUL-terminated string, a byte array, a DLTensor); `raw` then reads the packed value from
/// it. Scalars need no holder and never allocate.
pub trait ToArg {
    type Holder;
    fn prepare(&self) -> Result<Self::Holder>;
    fn raw(&self, holder: &Self::Holder) -> (TVMValue, c_int);
    /// `prepare` into the slot the call keeps its holder in (empty on entry). The default
    /// moves `prepare`'s result there; strings write their buffer in place instead.
    #[inline(always)]
    fn prepare_in(&self, slot: &mut Option<Self::Holder>) -> Result<()> {
        *slot = Some(self.prepare()?);
        Ok(())
    }
}

macro_rules! scalar_arg {
    ($($t:ty => |$x:ident| ($field:ident: $e:expr, $code:expr)),* $(,)?) => {$(
        impl ToArg for $t {
            type Holder = ();
            #[inline(always)]
            fn prepare(&self) -> Result<()> { Ok(()) }
            #[inline(always)]
            fn raw(&self, _: &()) -> (TVMValue, c_int) {
                let $x = *self;
                (TVMValue { $field: $e }, $code)
            }
        }
    )*};
}

scalar_arg! {
    i64 => |x| (v_int64: x, INT),
    i32 => |x| (v_int64: x.into(), INT),
    i16 => |x| (v_int64: x.into(), INT),
    i8 => |x| (v_int64: x.into(), INT),
    u32 => |x| (v_int64: x.into(), INT),
    u16 => |x| (v_int64: x.into(), INT),
    u8 => |x| (v_int64: x.into(), INT),
    usize => |x| (v_int64: x as i64, INT),
    f64 => |x| (v_float64: x, FLOAT),
    f32 => |x| (v_float64: x.into(), FLOAT),
    bool => |x| (v_int64: x as i64, BOOL),
    () => |_x| (v_int64: 0, NULL),
    Device => |x| (v_device: x.to_raw(), DEVICE),
    DataType => |x| (v_type: x.to_raw(), DTYPE),
}

impl ToArg for str {
    type Holder = StrHolder;
    #[inline(always)]
    fn prepare(&self) -> Result<StrHolder> {
        StrHolder::new(self.as_bytes())
    }
    #[inline(always)]
    fn prepare_in(&self, slot: &mut Option<StrHolder>) -> Result<()> {
        StrHolder::new_in(self.as_bytes(), slot)
    }
    #[inline(always)]
    fn raw(&self, h: &StrHolder) -> (TVMValue, c_int) {
        h.raw()
    }
}

impl ToArg for String {
    type Holder = StrHolder;
    fn prepare(&self) -> Result<StrHolder> {
        StrHolder::new(self.as_bytes())
    }
    #[inline(always)]
    fn prepare_in(&self, slot: &mut Option<StrHolder>) -> Result<()> {
        StrHolder::new_in(self.as_bytes(), slot)
    }
    fn raw(&self, h: &StrHolder) -> (TVMValue, c_int) {
        h.raw()
    }
}

impl ToArg for [u8] {
    type Holder = sys::TVMByteArray;
    fn prepare(&self) -> Result<sys::TVMByteArray> {
        Ok(sys::TVMByteArray {
            data: self.as_ptr() as *const _,
            size: self.len(),
        })
    }
    fn raw(&self, h: &sys::TVMByteArray) -> (TVMValue, c_int) {
        (
            TVMValue {
                v_handle: h as *const _ as *mut c_void,
            },
            BYTES,
        )
    }
}

impl ToArg for Vec<u8> {
    type Holder = sys::TVMByteArray;
    fn prepare(&self) -> Result<sys::TVMByteArray> {
        self.as_slice().prepare()
    }
    fn raw(&self, h: &sys::TVMByteArray) -> (TVMValue, c_int) {
        self.as_slice().raw(h)
    }
}

macro_rules! handle_arg {
    ($($t:ty => |$x:ident| ($e:expr, $code:expr)),* $(,)?) => {$(
        impl ToArg for $t {
            type Holder = ();
            #[inline(always)]
            fn prepare(&self) -> Result<()> { Ok(()) }
            #[inline(always)]
            fn raw(&self, _: &()) -> (TVMValue, c_int) {
                let $x = self;
                (TVMValue { v_handle: $e }, $code)
            }
        }
    )*};
}

handle_arg! {
    Function => |x| (x.as_raw(), FUNC),
    Module => |x| (x.as_raw(), MODULE),
    Object => |x| (x.as_raw(), OBJECT),
    Array => |x| (x.0.as_raw(), OBJECT),
    Map => |x| (x.0.as_raw(), OBJECT),
    NDArray => |x| (x.as_raw() as *mut c_void, x.type_code()),
}

impl Value {
    /// The packed form of a value that needs no holder during a call (everything but strings,
    /// bytes and shapes); None for those three.
    #[inline(always)]
    pub(crate) fn raw_plain(&self) -> Option<(TVMValue, c_int)> {
        Some(match self {
            Value::Int(x) => (TVMValue { v_int64: *x }, INT),
            Value::Float(x) => (TVMValue { v_float64: *x }, FLOAT),
            Value::Bool(x) => (TVMValue { v_int64: *x as i64 }, BOOL),
            Value::Null => (TVMValue { v_int64: 0 }, NULL),
            Value::Device(x) => x.raw(&()),
            Value::DataType(x) => x.raw(&()),
            Value::Function(x) => x.raw(&()),
            Value::Module(x) => x.raw(&()),
            Value::NDArray(x) => x.raw(&()),
            Value::Array(x) => x.raw(&()),
            Value::Map(x) => x.raw(&()),
            Value::Object(x) => x.raw(&()),
            Value::OpaqueHandle(p) => (
                TVMValue {
                    v_handle: *p as *mut c_void,
                },
                OPAQUE,
            ),
            Value::Str(_) | Value::Bytes(_) | Value::Shape(_) => return None,
        })
    }
}

impl ToArg for Value {
    type Holder = ValueHolder;
    fn prepare(&self) -> Result<ValueHolder> {
        Ok(match self {
            Value::Str(s) => ValueHolder::Str(StrHolder::new(s.as_bytes())?),
            Value::Bytes(b) => ValueHolder::Bytes(b.as_slice().prepare()?),
            Value::Shape(s) => ValueHolder::Object(s.to_object()?),
            _ => ValueHolder::None,
        })
    }
    fn raw(&self, h: &ValueHolder) -> (TVMValue, c_int) {
        match (self, h) {
            (Value::Str(_), ValueHolder::Str(s)) => s.raw(),
            (Value::Bytes(_), ValueHolder::Bytes(b)) => (
                TVMValue {
                    v_handle: b as *const _ as *mut c_void,
                },
                BYTES,
            ),
            (Value::Shape(_), ValueHolder::Object(o)) => o.raw(&()),
            (Value::Null, _) => (TVMValue { v_int64: 0 }, NULL),
            (Value::Int(x), _) => x.raw(&()),
            (Value::Float(x), _) => x.raw(&()),
            (Value::Bool(x), _) => x.raw(&()),
            (Value::Device(x), _) => x.raw(&()),
            (Value::DataType(x), _) => x.raw(&()),
            (Value::Function(x), _) => x.raw(&()),
            (Value::Module(x), _) => x.raw(&()),
            (Value::NDArray(x), _) => x.raw(&()),
            (Value::Array(x), _) => x.raw(&()),
            (Value::Map(x), _) => x.raw(&()),
            (Value::Object(x), _) => x.raw(&()),
            (Value::OpaqueHandle(p), _) => (
                TVMValue {
                    v_handle: *p as *mut c_void,
                },
                OPAQUE,
            ),
            // prepare() always pairs Str/Bytes/Shape with their holders.
            (Value::Str(_), _) | (Value::Bytes(_), _) | (Value::Shape(_), _) => {
                (TVMValue { v_int64: 0 }, NULL)
            }
        }
    }
}

/// A Shape argument: a `runtime.ShapeTuple` made for the call.
impl ToArg for Shape {
    type Holder = Object;
    fn prepare(&self) -> Result<Object> {
        self.to_object()
    }
    fn raw(&self, h: &Object) -> (TVMValue, c_int) {
        h.raw(&())
    }
}

impl<T: ToArg + ?Sized> ToArg for &T {
    type Holder = T::Holder;
    #[inline(always)]
    fn prepare(&self) -> Result<T::Holder> {
        (**self).prepare()
    }
    #[inline(always)]
    fn raw(&self, h: &T::Holder) -> (TVMValue, c_int) {
        (**self).raw(h)
    }
    #[inline(always)]
    fn prepare_in(&self, slot: &mut Option<T::Holder>) -> Result<()> {
        (**self).prepare_in(slot)
    }
}

impl<T: ToArg> ToArg for Option<T> {
    type Holder = Option<T::Holder>;
    fn prepare(&self) -> Result<Option<T::Holder>> {
        self.as_ref().map(|x| x.prepare()).transpose()
    }
    fn raw(&self, h: &Option<T::Holder>) -> (TVMValue, c_int) {
        match (self, h) {
            (Some(x), Some(h)) => x.raw(h),
            _ => (TVMValue { v_int64: 0 }, NULL),
        }
    }
}

/// The arguments of a typed call: tuples of up to 8 [`ToArg`] values, packed on the stack.
pub trait IntoArgs {
    /// Packs the arguments and runs `f` on the packed values and type codes; `f`'s own
    /// `Result` is the result (a packing error comes first).
    fn with_packed<R>(
        self,
        f: impl FnOnce(&mut [TVMValue], &mut [c_int]) -> Result<R>,
    ) -> Result<R>;
}

impl IntoArgs for () {
    #[inline(always)]
    fn with_packed<R>(
        self,
        f: impl FnOnce(&mut [TVMValue], &mut [c_int]) -> Result<R>,
    ) -> Result<R> {
        f(&mut [], &mut [])
    }
}

macro_rules! tuple_args {
    ($n:literal; $($T:ident $i:tt),+) => {
        impl<$($T: ToArg),+> IntoArgs for ($($T,)+) {
            #[inline(always)]
            fn with_packed<R>(
                self,
                f: impl FnOnce(&mut [TVMValue], &mut [c_int]) -> Result<R>,
            ) -> Result<R> {
                // Each holder is made in the slot it stays in until the end of the call (a
                // string's buffer is written there, not moved), and dropped at the end of this
                // scope; slots after a failed one stay empty.
                let mut holders = ($(None::<$T::Holder>,)+);
                $(self.$i.prepare_in(&mut holders.$i)?;)+
                // SAFETY: prepare_in filled every slot (it returned Ok).
                let raw: [(TVMValue, c_int); $n] =
                    [$(self.$i.raw(unsafe { holders.$i.as_ref().unwrap_unchecked() })),+];
                let mut values: [TVMValue; $n] = raw.map(|r| r.0);
                let mut codes: [c_int; $n] = raw.map(|r| r.1);
                f(&mut values, &mut codes)
            }
        }
    };
}

tuple_args!(1; A 0);
tuple_args!(2; A 0, B 1);
tuple_args!(3; A 0, B 1, C 2);
tuple_args!(4; A 0, B 1, C 2, D 3);
tuple_args!(5; A 0, B 1, C 2, D 3, E 4);
tuple_args!(6; A 0, B 1, C 2, D 3, E 4, F 5);
tuple_args!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_args!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// Packs a slice of values: on the stack up to 8 arguments, on the heap beyond. Values that
/// need no holder (scalars, objects) are packed in one pass without initialising the unused
/// slots; a string, bytes or shape argument takes the general path. `f`'s own `Result` is
/// the result (no nested `Result` to move and flatten on the call path).
#[inline]
pub(crate) fn with_packed_slice<R>(
    args: &[Value],
    f: impl FnOnce(&mut [TVMValue], &mut [c_int]) -> Result<R>,
) -> Result<R> {
    const N: usize = 8;
    let n = args.len();
    if n <= N {
        let mut values = [std::mem::MaybeUninit::<TVMValue>::uninit(); N];
        let mut codes = [std::mem::MaybeUninit::<c_int>::uninit(); N];
        for (i, a) in args.iter().enumerate() {
            match a.raw_plain() {
                Some((v, c)) => {
                    values[i].write(v);
                    codes[i].write(c);
                }
                None => return with_packed_slice_held(args, f),
            }
        }
        // SAFETY: the first n slots were written above.
        let (values, codes) = unsafe {
            (
                std::slice::from_raw_parts_mut(values.as_mut_ptr() as *mut TVMValue, n),
                std::slice::from_raw_parts_mut(codes.as_mut_ptr() as *mut c_int, n),
            )
        };
        return f(values, codes);
    }
    with_packed_slice_held(args, f)
}

/// The general path: every argument gets its holder (NUL-terminated strings, byte arrays,
/// shape objects) before the call.
#[inline(never)]
fn with_packed_slice_held<R>(
    args: &[Value],
    f: impl FnOnce(&mut [TVMValue], &mut [c_int]) -> Result<R>,
) -> Result<R> {
    const N: usize = 8;
    if args.len() <= N {
        let mut holders: [ValueHolder; N] = std::array::from_fn(|_| ValueHolder::None);
        for (h, a) in holders.iter_mut().zip(args) {
            *h = a.prepare()?;
        }
        let mut values = [TVMValue { v_int64: 0 }; N];
        let mut codes = [NULL; N];
        for (i, a) in args.iter().enumerate() {
            (values[i], codes[i]) = a.raw(&holders[i]);
        }
        f(&mut values[..args.len()], &mut codes[..args.len()])
    } else {
        let holders = args
            .iter()
            .map(|a| a.prepare())
            .collect::<Result<Vec<_>>>()?;
        let (mut values, mut codes): (Vec<TVMValue>, Vec<c_int>) =
            args.iter().zip(&holders).map(|(a, h)| a.raw(h)).unzip();
        f(&mut values, &mut codes)
    }
}

// ---- Calls ------------------------------------------------------------------------------------

/// Calling a [`Function`] with values: arguments packed by [`IntoArgs`] (or from a slice of
/// [`Value`]s), the result read by [`FromRet`]. They live beside the conversions because the
/// conversions themselves call core functions (`runtime.StringBytes`, `runtime.Array`, ...).
impl Function {
    /// Calls with a slice of values (up to 8 arguments are packed on the stack).
    #[inline]
    pub fn call(&self, args: &[Value]) -> Result<Value> {
        with_packed_slice(args, |values, codes| {
            self.call_raw_typed::<Value>(values, codes)
        })
    }

    /// Typed call: `f.invoke::<i64>((1, 2, 3))`. Arguments are a tuple of up to 8 values
    /// implementing [`ToArg`](crate::ToArg), packed on the stack; scalar arguments and scalar
    /// results never allocate.
    #[inline]
    pub fn invoke<R: FromRet>(&self, args: impl IntoArgs) -> Result<R> {
        args.with_packed(|values, codes| self.call_raw_typed::<R>(values, codes))
    }

    /// Calls with already packed values.
    pub fn call_raw(&self, values: &mut [TVMValue], codes: &mut [c_int]) -> Result<Value> {
        self.call_raw_typed::<Value>(values, codes)
    }

    /// Typed call with a string result written into `out` (cleared first), reusing its buffer:
    /// once `out` has the capacity, a call with short string arguments allocates nothing.
    /// A result that is not a string is a TypeError and leaves `out` empty.
    #[inline]
    pub fn invoke_into_string(&self, args: impl IntoArgs, out: &mut String) -> Result<()> {
        out.clear();
        args.with_packed(|values, codes| {
            let (ret, code) = self.call_packed_raw(values, codes)?;
            // SAFETY: the owned result of the call just made.
            unsafe { crate::value::string_into(ret, code, out) }
        })
    }

    /// Typed call whose string result is lent to `f` as a `&str`, without copying it: `f` runs
    /// right after the call, on the characters the callee left in this thread's return storage,
    /// and its return value is the result. Like C++'s `CallView`, for a caller that only reads
    /// the string (compares it, parses it, writes it somewhere).
    ///
    /// The borrow cannot outlive `f` (the `&str` is valid for `f`'s body only, so keeping it
    /// does not compile), and no call can replace the storage while `f` runs: every call made
    /// through this crate on this thread inside `f` fails with a RuntimeError instead of being
    /// made. A result that is not a `kTVMStr` in that storage (a `runtime.String` object, a
    /// string with NUL bytes) is converted as [`invoke::<String>`](Self::invoke) converts it and
    /// lent from that `String`; anything that is not a string, and a string that is not UTF-8,
    /// is the TypeError `invoke::<String>` gives (`expected str but got ...`), and `f` does not
    /// run.
    ///
    /// ```no_run
    /// # use polyffi::Function;
    /// # fn main() -> polyffi::Result<()> {
    /// let echo = Function::global("testing.echo")?;
    /// let n = echo.invoke_with_str(("hello",), |s| s.len())?;
    /// assert_eq!(n, 5);
    /// # Ok(()) }
    /// ```
    ///
    /// Keeping the borrow past the closure does not compile:
    ///
    /// ```compile_fail
    /// # use polyffi::Function;
    /// # fn main() -> polyffi::Result<()> {
    /// let echo = Function::global("testing.echo")?;
    /// let kept: &str = echo.invoke_with_str(("hello",), |s| s)?;
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn invoke_with_str<T>(&self, args: impl IntoArgs, f: impl FnOnce(&str) -> T) -> Result<T> {
        args.with_packed(|values, codes| {
            let (ret, code) = self.call_packed_raw(values, codes)?;
            // SAFETY: the owned result of the call just made.
            unsafe { lend_str(ret, code, f) }
        })
    }

    /// [`invoke_with_str`](Self::invoke_with_str) for a bytes result, lent as `&[u8]`: a
    /// `kTVMBytes` or `kTVMStr` result is lent from the return storage as it is, anything else
    /// converted as `invoke::<Vec<u8>>` converts it (TypeError `expected bytes but got ...`).
    /// The same rules hold while `f` runs: calls through this crate on this thread are refused.
    #[inline]
    pub fn invoke_with_bytes<T>(
        &self,
        args: impl IntoArgs,
        f: impl FnOnce(&[u8]) -> T,
    ) -> Result<T> {
        args.with_packed(|values, codes| {
            let (ret, code) = self.call_packed_raw(values, codes)?;
            // SAFETY: the owned result of the call just made.
            unsafe { lend_bytes(ret, code, f) }
        })
    }

    #[inline(always)]
    fn call_raw_typed<R: FromRet>(
        &self,
        values: &mut [TVMValue],
        codes: &mut [c_int],
    ) -> Result<R> {
        let (ret, ret_code) = self.call_packed_raw(values, codes)?;
        // SAFETY: ret is the owned result of the call just made.
        unsafe { R::from_ret(ret, ret_code) }
    }

    /// The call itself: the raw owned result, or the runtime's error.
    #[inline(always)]
    fn call_packed_raw(
        &self,
        values: &mut [TVMValue],
        codes: &mut [c_int],
    ) -> Result<(TVMValue, c_int)> {
        let n =
            c_int::try_from(values.len()).map_err(|_| Error::value_error("too many arguments"))?;
        let mut ret = TVMValue {
            v_handle: std::ptr::null_mut(),
        };
        let mut ret_code: c_int = NULL;
        // SAFETY: values/codes hold n arguments packed by this crate, alive during the call.
        let status = unsafe { self.call_slot(values, codes, n, &mut ret, &mut ret_code) };
        check_call(status)?;
        // A direct callee's slot arrives as written: an rvalue reference is not a result
        // (TVMFuncCall refuses it too; it owns nothing, so nothing is released). A borrowed
        // tensor view is taken as TVMFuncCall hands it on from classic callees (testing.echo of
        // a view): its descriptor is copied at once, its data stays the caller's.
        if ret_code == RVALUE_REF {
            return Err(refused_result(ret_code));
        }
        Ok((ret, ret_code))
    }
}

#[cold]
#[inline(never)]
fn refused_result(code: c_int) -> Error {
    Error::type_error(format!(
        "callee returned an unsupported value ({}); a function result must own what it holds",
        type_code_name(code)
    ))
}

// ---- Results ----------------------------------------------------------------------------------

/// A call's result type. Scalars convert without allocating; anything else goes through
/// [`Value`] and `TryFrom` (TypeError naming both types on a mismatch).
pub trait FromRet: Sized {
    /// # Safety
    /// `v`, `code` must be an owned result just returned by the runtime.
    unsafe fn from_ret(v: TVMValue, code: c_int) -> Result<Self>;
}

impl FromRet for Value {
    /// Scalars inline; everything else out of line.
    #[inline(always)]
    unsafe fn from_ret(v: TVMValue, code: c_int) -> Result<Self> {
        // An int (the usual result) with one compare, before the table of the other codes.
        if code == INT {
            return Ok(Value::Int(v.v_int64));
        }
        match code {
            UINT => Ok(Value::Int(v.v_int64)),
            FLOAT => Ok(Value::Float(v.v_float64)),
            BOOL => Ok(Value::Bool(v.v_int64 != 0)),
            NULL => Ok(Value::Null),
            _ => Value::from_raw_owned(v, code),
        }
    }
}

macro_rules! fast_ret {
    ($($t:ty => |$v:ident| $($code:pat => $e:expr),+);* $(;)?) => {$(
        impl FromRet for $t {
            #[inline(always)]
            unsafe fn from_ret($v: TVMValue, code: c_int) -> Result<Self> {
                match code {
                    $($code => Ok($e),)+
                    _ => <$t>::try_from(Value::from_raw_owned($v, code)?),
                }
            }
        }
    )*};
}

impl FromRet for String {
    #[inline]
    unsafe fn from_ret(v: TVMValue, code: c_int) -> Result<Self> {
        if code == STR {
            if let Some(s) = utf8(CStr::from_ptr(v.v_str).to_bytes()) {
                return Ok(s.to_owned());
            }
        }
        String::try_from(Value::from_raw_owned(v, code)?)
    }
}

/// A string result into a caller's buffer (see `Function::invoke_into_string`).
///
/// # Safety
/// `v`, `code` must be an owned result just returned by the runtime.
#[inline]
pub(crate) unsafe fn string_into(v: TVMValue, code: c_int, out: &mut String) -> Result<()> {
    if code == STR {
        if let Some(s) = utf8(CStr::from_ptr(v.v_str).to_bytes()) {
            out.push_str(s);
            return Ok(());
        }
    }
    *out = String::from_ret(v, code)?;
    Ok(())
}

/// A string result lent to `f` (see `Function::invoke_with_str`).
///
/// # Safety
/// `v`, `code` must be an owned result just returned by the runtime.
#[inline]
unsafe fn lend_str<T>(v: TVMValue, code: c_int, f: impl FnOnce(&str) -> T) -> Result<T> {
    if code == STR {
        if let Some(s) = utf8(CStr::from_ptr(v.v_str).to_bytes()) {
            let _lent = crate::handle::Lent::start();
            return Ok(f(s));
        }
    }
    lend_str_owned(v, code, f)
}

/// Everything but a UTF-8 `kTVMStr`: the owned conversion, then the same rules for `f`.
#[cold]
#[inline(never)]
unsafe fn lend_str_owned<T>(v: TVMValue, code: c_int, f: impl FnOnce(&str) -> T) -> Result<T> {
    let s = String::try_from(Value::from_raw_owned(v, code)?)?;
    let _lent = crate::handle::Lent::start();
    Ok(f(&s))
}

/// A bytes result lent to `f` (see `Function::invoke_with_bytes`).
///
/// # Safety
/// `v`, `code` must be an owned result just returned by the runtime.
#[inline]
unsafe fn lend_bytes<T>(v: TVMValue, code: c_int, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
    let bytes = match code {
        BYTES => bytes_of(&*(v.v_handle as *const sys::TVMByteArray)),
        STR => CStr::from_ptr(v.v_str).to_bytes(),
        _ => return lend_bytes_owned(v, code, f),
    };
    let _lent = crate::handle::Lent::start();
    Ok(f(bytes))
}

#[cold]
#[inline(never)]
unsafe fn lend_bytes_owned<T>(v: TVMValue, code: c_int, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
    let b = Vec::<u8>::try_from(Value::from_raw_owned(v, code)?)?;
    let _lent = crate::handle::Lent::start();
    Ok(f(&b))
}

fast_ret! {
    i64 => |v| INT | UINT => v.v_int64;
    f64 => |v| FLOAT => v.v_float64, INT | UINT | BOOL => v.v_int64 as f64;
    bool => |v| BOOL => v.v_int64 != 0;
    () => |v| NULL => ();
}

macro_rules! slow_ret {
    ($($t:ty),*) => {$(
        impl FromRet for $t {
            unsafe fn from_ret(v: TVMValue, code: c_int) -> Result<Self> {
                <$t>::try_from(Value::from_raw_owned(v, code)?)
            }
        }
    )*};
}

slow_ret!(
    i32,
    f32,
    Vec<u8>,
    Device,
    DataType,
    DataTypeOrString,
    Function,
    Module,
    NDArray,
    Array,
    Map,
    Shape
);

/// An object result as the raw object, without turning runtime.String / Array / Map into their
/// native counterparts.
impl FromRet for Object {
    unsafe fn from_ret(v: TVMValue, code: c_int) -> Result<Self> {
        match (code, NonNull::new(v.v_handle)) {
            (OBJECT, Some(h)) => Ok(Object::from_raw(h)),
            _ => Object::try_from(Value::from_raw_owned(v, code)?),
        }
    }
}

impl<T: FromRet> FromRet for Option<T> {
    unsafe fn from_ret(v: TVMValue, code: c_int) -> Result<Self> {
        if code == NULL {
            Ok(None)
        } else {
            T::from_ret(v, code).map(Some)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_round_trips() {
        for s in [
            "float32",
            "int8x4",
            "bool",
            "handle",
            "uint16",
            "bfloat16",
            "float64x2",
        ] {
            assert_eq!(DataType::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(DataType::parse("int").unwrap(), DataType::INT32);
        assert_eq!(DataType::parse("bool").unwrap(), DataType::BOOL);
        for bad in [
            "",
            "floaty",
            "int0",
            "int300",
            "float32x",
            "float32x0",
            "boolx",
            "bool8",
        ] {
            let err = DataType::parse(bad).unwrap_err();
            assert_eq!(err.kind(), "ValueError", "{bad}");
            // The core's words, as every binding says them.
            assert_eq!(err.message(), format!("unknown dtype '{bad}'"));
        }
    }

    #[test]
    fn dtype_without_a_string_form_prints_as_the_c_bindings_do() {
        assert_eq!(DataType::new(45, 2, 8192).to_string(), "<dtype 45:2x8192>");
        assert_eq!(DataType::new(sys::kDLUInt as u8, 1, 1).to_string(), "bool");
    }

    #[test]
    fn raw_results_read_as_tvm_func_call_hands_them_on() {
        // A direct callee's entry hands kTVMDataType and kDLUInt on raw; results read as the
        // string and the int TVMFuncCall makes of them, whatever the requested type.
        let t = DataType::parse("int8x4").unwrap().to_raw();
        let dtype = TVMValue { v_type: t };
        // SAFETY: plain values, nothing owned.
        unsafe {
            assert_eq!(
                Value::from_ret(dtype, DTYPE).unwrap(),
                Value::Str("int8x4".into())
            );
            assert_eq!(String::from_ret(dtype, DTYPE).unwrap(), "int8x4");
            assert_eq!(
                DataTypeOrString::from_ret(dtype, DTYPE).unwrap().0,
                DataType::from_raw(t)
            );
            let err = DataType::from_ret(dtype, DTYPE).unwrap_err();
            assert_eq!(err.message(), "expected dtype but got str");
            let mut out = String::from("stale");
            string_into(dtype, DTYPE, &mut out).unwrap();
            assert_eq!(out, "int8x4");
            let big = TVMValue { v_int64: -5 };
            assert_eq!(Value::from_ret(big, UINT).unwrap(), Value::Int(-5));
            assert_eq!(i64::from_ret(big, UINT).unwrap(), -5);
            assert_eq!(f64::from_ret(big, UINT).unwrap(), -5.0);
            // A callback's dtype argument stays a dtype.
            assert_eq!(
                Value::from_raw_borrowed(dtype, DTYPE).unwrap(),
                Value::DataType(DataType::from_raw(t))
            );
        }
    }

    #[test]
    fn short_strings_are_copied_and_every_nul_found() {
        let check = |s: &[u8]| {
            let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 64];
            let nul = copy_c_short(s, &mut buf);
            // SAFETY: s.len() + 1 bytes were written.
            let copied =
                unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const u8, s.len() + 1) };
            assert_eq!(&copied[..s.len()], s);
            assert_eq!(copied[s.len()], 0);
            nul
        };
        for len in 0..64 {
            let clean: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(!check(&clean), "len {len}");
            // Bytes above 0x80 and 0x01 neighbours must not look like NUL.
            let high: Vec<u8> = (0..len).map(|i| [0x80, 0x01, 0xff][i % 3]).collect();
            assert!(!check(&high), "len {len}");
            for at in 0..len {
                let mut s = clean.clone();
                s[at] = 0;
                assert!(check(&s), "len {len} NUL at {at}");
            }
        }
    }

    #[test]
    fn type_code_names_are_the_cores() {
        assert_eq!(type_code_name(INT), "int");
        assert_eq!(type_code_name(FLOAT), "float");
        assert_eq!(type_code_name(NDARRAY), "NDArray");
        assert_eq!(type_code_name(STR), "str");
        assert_eq!(type_code_name(99), "unknown type code");
    }
}
