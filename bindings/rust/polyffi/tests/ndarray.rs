//! NDArrays and zero-copy exchange with the `ndarray` crate.
mod common;

use ndarray::{ArrayD, IxDyn};
use polyffi::{DataType, Device, NDArray, Value};

#[test]
fn from_slice_shape_dtype_and_data() {
    common::testing();
    let a = NDArray::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    assert_eq!(a.shape(), &[2, 3]);
    assert_eq!(a.dtype(), DataType::FLOAT32);
    assert_eq!(a.dtype().to_string(), "float32");
    assert_eq!(a.device(), Device::cpu(0));
    assert_eq!(
        a.as_slice::<f32>().unwrap(),
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    let total: f64 = common::global("testing.nd_sum").invoke((&a,)).unwrap();
    assert_eq!(total, 21.0);
    assert_eq!(a.as_slice::<i32>().unwrap_err().kind(), "TypeError");
    let err = NDArray::from_slice(&[1i64, 2, 3], &[2, 2]).unwrap_err();
    assert_eq!(err.kind(), "ValueError");
}

#[test]
fn from_bytes_and_copy_from_bytes() {
    common::testing();
    let bytes: Vec<u8> = [1.5f64, -2.0, 3.25]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let mut a = NDArray::from_bytes(&bytes, &[3], DataType::FLOAT64).unwrap();
    assert_eq!(a.as_slice::<f64>().unwrap(), &[1.5, -2.0, 3.25]);
    assert_eq!(a.to_bytes().unwrap(), bytes);
    a.copy_from_bytes(&[0u8; 24]).unwrap();
    assert_eq!(a.as_slice::<f64>().unwrap(), &[0.0; 3]);
    let err = a.copy_from_bytes(&[0u8; 23]).unwrap_err();
    assert_eq!(err.kind(), "ValueError");
    assert!(err.message().contains("24 bytes but 23"), "{err}");
    assert_eq!(
        NDArray::from_bytes(&bytes, &[2, 2], DataType::FLOAT64)
            .unwrap_err()
            .kind(),
        "ValueError"
    );
    assert!(NDArray::from_bytes(&bytes, &[-3], DataType::FLOAT64).is_err());
}

#[test]
fn views_of_an_ndarray_share_its_memory() {
    common::testing();
    let mut a = NDArray::empty(&[2, 2], DataType::FLOAT64, Device::cpu(0)).unwrap();
    let ptr = a.data_ptr();
    {
        let mut v = a.view_mut::<f64>().unwrap();
        v.fill(0.0);
        v[[1, 0]] = 7.5;
        assert_eq!(v.as_ptr() as *mut _, ptr);
    }
    assert_eq!(a.view::<f64>().unwrap()[[1, 0]], 7.5);
    assert_eq!(a.as_slice::<f64>().unwrap(), &[0.0, 0.0, 7.5, 0.0]);
    let from_c: i64 = common::global("testing.nd_data_ptr").invoke((&a,)).unwrap();
    assert_eq!(from_c as usize, ptr as usize);
}

#[test]
fn ndarray_views_pass_to_c_without_copying() {
    let input =
        ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![0.5f32, 1.5, 2.5, 3.5, 4.5, 5.5]).unwrap();
    let mut output = ArrayD::<f32>::zeros(IxDyn(&[2, 3]));
    let data_ptr = common::global("testing.nd_data_ptr");
    let seen: i64 = data_ptr.invoke((&input.view(),)).unwrap();
    assert_eq!(
        seen as usize,
        input.as_ptr() as usize,
        "C saw the same data pointer"
    );
    // C writes into the Rust-owned buffer through the mutable view.
    common::global("testing.nd_add_one")
        .invoke::<()>((&input.view(), &output.view_mut()))
        .unwrap();
    assert_eq!(output.as_slice().unwrap(), &[1.5, 2.5, 3.5, 4.5, 5.5, 6.5]);
    // An echoed view comes back as a borrowed NDArray over the same memory.
    let back: Value = common::global("testing.echo")
        .invoke((&input.view(),))
        .unwrap();
    let Value::NDArray(nd) = back else {
        panic!("echo returned {back:?}")
    };
    assert!(!nd.is_owned());
    assert_eq!(nd.data_ptr() as usize, input.as_ptr() as usize);
    assert_eq!(nd.shape(), &[2, 3]);
}

#[test]
fn strided_views_carry_their_strides() {
    let a = ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let nd_sum = common::global("testing.nd_sum");
    assert_eq!(nd_sum.invoke::<f64>((&a.view(),)).unwrap(), 21.0);
    // A column-major view passes its strides (3, 1 -> 1, 3): the fixture reads compact data
    // only and refuses it, instead of reading it as if it were row-major.
    let t = a.view().reversed_axes();
    let err = nd_sum.invoke::<f64>((&t,)).unwrap_err();
    assert_eq!(err.kind(), "ValueError", "{err}");
    // A column view with a size-1 axis is compact whatever its stride says.
    let col = a.slice(ndarray::s![0..1, ..]).into_dyn();
    assert_eq!(nd_sum.invoke::<f64>((&col,)).unwrap(), 6.0);
}

#[test]
fn clone_shares_the_array() {
    common::testing();
    let a = NDArray::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    let b = a.clone();
    assert_eq!(a.as_raw(), b.as_raw());
    drop(a);
    assert_eq!(b.as_slice::<i32>().unwrap(), &[1, 2, 3]);
    let c = NDArray::from_ndarray(&ndarray::arr2(&[[1u8, 2], [3, 4]])).unwrap();
    assert_eq!(c.shape(), &[2, 2]);
    assert_eq!(c.as_slice::<u8>().unwrap(), &[1, 2, 3, 4]);
}

/// A view a callback received lives only as long as the call; returning it is a ValueError (as
/// in Python and Node), not a dangling array in the caller's hands.
#[test]
fn a_callback_cannot_return_a_borrowed_view() {
    let apply = common::global("testing.apply");
    let identity = polyffi::Function::from_closure(|args: &[Value]| Ok(args[0].clone())).unwrap();
    let a = ArrayD::from_shape_vec(IxDyn(&[2]), vec![1.0f64, 2.0]).unwrap();
    let err = apply.invoke::<Value>((&identity, &a.view())).unwrap_err();
    assert_eq!(err.kind(), "ValueError", "{err}");
    assert_eq!(
        err.message(),
        "polyffi: a borrowed NDArray view cannot be returned from a callback"
    );
    // An owned array still goes back and forth.
    let owned = NDArray::from_slice(&[3.0f64, 4.0], &[2]).unwrap();
    let back: NDArray = apply.invoke((&identity, &owned)).unwrap();
    assert_eq!(back.as_slice::<f64>().unwrap(), &[3.0, 4.0]);
}
