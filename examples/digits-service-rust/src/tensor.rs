//! Tensors of the Open Inference Protocol: datatype names, and the JSON `data` of a tensor
//! (row-major, flat or nested) to and from the bytes of an array.
use serde::Serialize;
use serde_json::Value as Json;

/// The protocol's datatype for a runtime dtype (`float32` -> `FP32`), if it has one.
pub fn oip_datatype(dtype: &str) -> Option<&'static str> {
    Some(match dtype {
        "bool" => "BOOL",
        "uint8" => "UINT8",
        "uint16" => "UINT16",
        "uint32" => "UINT32",
        "uint64" => "UINT64",
        "int8" => "INT8",
        "int16" => "INT16",
        "int32" => "INT32",
        "int64" => "INT64",
        "float16" => "FP16",
        "float32" => "FP32",
        "float64" => "FP64",
        "bfloat16" => "BF16",
        _ => return None,
    })
}

/// Bytes per element of a protocol datatype.
pub fn element_size(datatype: &str) -> Option<usize> {
    Some(match datatype {
        "BOOL" | "UINT8" | "INT8" => 1,
        "UINT16" | "INT16" | "FP16" | "BF16" => 2,
        "UINT32" | "INT32" | "FP32" => 4,
        "UINT64" | "INT64" | "FP64" => 8,
        _ => return None,
    })
}

fn flatten<'a>(data: &'a Json, out: &mut Vec<&'a Json>) {
    match data {
        Json::Array(items) => items.iter().for_each(|i| flatten(i, out)),
        other => out.push(other),
    }
}

/// The little-endian bytes of `data` (flat or nested) as `datatype`; the error says which
/// element does not fit.
pub fn json_to_bytes(data: &Json, datatype: &str) -> Result<Vec<u8>, String> {
    let mut items = Vec::new();
    flatten(data, &mut items);
    let size = element_size(datatype)
        .filter(|_| datatype != "FP16" && datatype != "BF16")
        .ok_or_else(|| format!("datatype {datatype} is not supported in JSON data"))?;
    let mut out = Vec::with_capacity(items.len() * size);
    for (i, v) in items.into_iter().enumerate() {
        let bad = || format!("data[{i}] = {v} is not a valid {datatype} value");
        macro_rules! int {
            ($t:ty) => {{
                let x = v
                    .as_i64()
                    .and_then(|x| <$t>::try_from(x).ok())
                    .or_else(|| v.as_u64().and_then(|x| <$t>::try_from(x).ok()))
                    .ok_or_else(bad)?;
                out.extend_from_slice(&x.to_le_bytes());
            }};
        }
        match datatype {
            "BOOL" => out.push(v.as_bool().ok_or_else(bad)? as u8),
            "UINT8" => int!(u8),
            "UINT16" => int!(u16),
            "UINT32" => int!(u32),
            "UINT64" => int!(u64),
            "INT8" => int!(i8),
            "INT16" => int!(i16),
            "INT32" => int!(i32),
            "INT64" => int!(i64),
            "FP32" => {
                let x = v.as_f64().ok_or_else(bad)? as f32;
                if !x.is_finite() {
                    return Err(format!("data[{i}] = {v} is out of the range of FP32"));
                }
                out.extend_from_slice(&x.to_le_bytes())
            }
            "FP64" => out.extend_from_slice(&v.as_f64().ok_or_else(bad)?.to_le_bytes()),
            _ => unreachable!("sized above"),
        }
    }
    Ok(out)
}

/// A tensor's elements as the response writes them: FP32 as f32, so each is written as the
/// shortest text that reads back as the same f32 (not as the f64 it widens to).
#[derive(Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Data {
    Bool(Vec<bool>),
    Int(Vec<i64>),
    UInt(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// The elements of little-endian `bytes` of `datatype` (flat). NaN and infinities are written as
/// null: JSON has no number for them.
pub fn bytes_to_data(bytes: &[u8], datatype: &str) -> Result<Data, String> {
    let size = element_size(datatype)
        .filter(|_| datatype != "FP16" && datatype != "BF16")
        .ok_or_else(|| format!("datatype {datatype} is not supported in JSON data"))?;
    let chunks = bytes.chunks_exact(size);
    macro_rules! le {
        ($t:ty) => {
            chunks.map(|b| <$t>::from_le_bytes(b.try_into().unwrap()))
        };
    }
    Ok(match datatype {
        "BOOL" => Data::Bool(bytes.iter().map(|&b| b != 0).collect()),
        "UINT8" => Data::UInt(bytes.iter().map(|&b| b as u64).collect()),
        "UINT16" => Data::UInt(le!(u16).map(u64::from).collect()),
        "UINT32" => Data::UInt(le!(u32).map(u64::from).collect()),
        "UINT64" => Data::UInt(le!(u64).collect()),
        "INT8" => Data::Int(bytes.iter().map(|&b| b as i8 as i64).collect()),
        "INT16" => Data::Int(le!(i16).map(i64::from).collect()),
        "INT32" => Data::Int(le!(i32).map(i64::from).collect()),
        "INT64" => Data::Int(le!(i64).collect()),
        "FP32" => Data::F32(le!(f32).collect()),
        _ => Data::F64(le!(f64).collect()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_and_rejects_what_does_not_fit() {
        let b = json_to_bytes(&json!([[1.5, -2], [3, 4]]), "FP32").unwrap();
        assert_eq!(b.len(), 16);
        assert_eq!(
            bytes_to_data(&b, "FP32").unwrap(),
            Data::F32(vec![1.5, -2.0, 3.0, 4.0])
        );
        let tenth = json_to_bytes(&json!([0.1]), "FP32").unwrap();
        let text = serde_json::to_string(&bytes_to_data(&tenth, "FP32").unwrap()).unwrap();
        assert_eq!(text, "[0.1]");
        let b = json_to_bytes(&json!([-1, 127]), "INT8").unwrap();
        assert_eq!(b, vec![255, 127]);
        assert_eq!(
            json_to_bytes(&json!([1, 128]), "INT8").unwrap_err(),
            "data[1] = 128 is not a valid INT8 value"
        );
        assert!(json_to_bytes(&json!([1.5]), "INT64").is_err());
        assert_eq!(
            json_to_bytes(&json!([1e39]), "FP32").unwrap_err(),
            "data[0] = 1e+39 is out of the range of FP32"
        );
        assert!(json_to_bytes(&json!(["a"]), "FP32").is_err());
        assert!(json_to_bytes(&json!([true]), "BOOL").is_ok());
        assert!(json_to_bytes(&json!([1]), "BYTES").is_err());
        let big = json_to_bytes(&json!([u64::MAX]), "UINT64").unwrap();
        assert_eq!(
            bytes_to_data(&big, "UINT64").unwrap(),
            Data::UInt(vec![u64::MAX])
        );
        let nan = f32::NAN.to_le_bytes();
        let text = serde_json::to_string(&bytes_to_data(&nan, "FP32").unwrap()).unwrap();
        assert_eq!(text, "[null]");
        assert_eq!(oip_datatype("float32"), Some("FP32"));
        assert_eq!(oip_datatype("handle"), None);
    }
}
