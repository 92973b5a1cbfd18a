//! Shapes as values: a runtime.ShapeTuple is a `Value::Shape(Shape)` (a `&[i64]` by deref) both
//! ways; a `Shape` argument reaches the callee as a runtime.ShapeTuple.
mod common;

use std::sync::{Arc, Mutex};

use polyffi::{Array, Function, NDArray, Shape, Value};

fn echo(v: Value) -> Value {
    common::global("testing.echo").call(&[v]).unwrap()
}

#[test]
fn a_shape_derefs_to_its_dimensions() {
    let s = Shape::from(vec![2, 3, 4]);
    assert_eq!(s.len(), 3);
    assert_eq!(s[2], 4);
    assert_eq!(s.iter().product::<i64>(), 24);
    assert_eq!(&*s, &[2, 3, 4][..]);
    assert_eq!(s, [2, 3, 4]);
    assert_eq!(Shape::from([7]).into_vec(), vec![7]);
    assert!(Shape::default().is_empty());
    assert_eq!(s.to_string(), "Shape([2, 3, 4])");
}

#[test]
fn a_shape_round_trips_as_a_shape() {
    for dims in [
        vec![2, 3],
        vec![],
        vec![i64::MAX, i64::MIN, 0, -1],
        (1..=9).collect::<Vec<i64>>(), // more than the core keeps inline
    ] {
        let out = echo(Value::Shape(Shape::from(dims.clone())));
        assert_eq!(out, Value::Shape(Shape::from(dims.clone())));
        let Value::Shape(s) = out else {
            panic!("not a shape")
        };
        assert_eq!(s.as_slice(), dims.as_slice());
    }
    // Typed: a Shape argument, a Shape result.
    let typed: Shape = common::global("testing.echo")
        .invoke((Shape::from([5, 6]),))
        .unwrap();
    assert_eq!(typed, [5, 6]);
}

#[test]
fn shapes_made_and_read_by_the_core() {
    let make = common::global("runtime.ShapeTuple");
    assert_eq!(
        make.invoke::<Shape>((1i64, -2i64, 65536i64)).unwrap(),
        [1, -2, 65536]
    );
    assert_eq!(make.call(&[]).unwrap(), Value::Shape(Shape::default()));
    let s = Shape::from([5, 6, 7]);
    let size: i64 = common::global("runtime.GetShapeTupleSize")
        .invoke((&s,))
        .unwrap();
    assert_eq!(size, 3);
    let elem: i64 = common::global("runtime.GetShapeTupleElem")
        .invoke((&s, 2i64))
        .unwrap();
    assert_eq!(elem, 7);
    let x = NDArray::from_slice(&[1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
    let shape: Shape = common::global("vm.builtin.shape_of").invoke((&x,)).unwrap();
    assert_eq!(shape, [2, 3]);
    let y: NDArray = common::global("vm.builtin.reshape")
        .invoke((&x, Shape::from([3, 2])))
        .unwrap();
    assert_eq!(y.shape(), &[3, 2]);
    assert_eq!(y.to_vec::<i32>().unwrap(), vec![1, 2, 3, 4, 5, 6]);
}

#[test]
fn a_vec_of_ints_stays_an_array_and_wrong_types_are_type_errors() {
    let arr = Array::new(&[Value::Int(1), Value::Int(2)]).unwrap();
    let err = common::global("runtime.GetShapeTupleSize")
        .invoke::<i64>((&arr,))
        .unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    let err = Shape::try_from(Value::Int(3)).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
}

#[test]
fn shapes_inside_containers_and_through_a_rust_closure() {
    let arr = Array::new(&[
        Value::Shape(Shape::from([1, 2])),
        Value::Shape(Shape::default()),
    ])
    .unwrap();
    assert_eq!(arr.get(0).unwrap(), Value::Shape(Shape::from([1, 2])));
    assert_eq!(arr.get(1).unwrap(), Value::Shape(Shape::default()));

    let seen = Arc::new(Mutex::new(None));
    let seen2 = seen.clone();
    let identity = Function::from_closure(move |args: &[Value]| {
        *seen2.lock().unwrap() = Some(args[0].clone());
        Ok(args[0].clone())
    })
    .unwrap();
    let out = common::global("testing.apply")
        .call(&[Value::Function(identity), Value::Shape(Shape::from([3, 4]))])
        .unwrap();
    assert_eq!(out, Value::Shape(Shape::from([3, 4])));
    assert_eq!(
        seen.lock().unwrap().take(),
        Some(Value::Shape(Shape::from([3, 4])))
    );
}

#[test]
fn shape_bytes_is_one_call_in_native_order() {
    let raw: Vec<u8> = common::global("runtime.ShapeTupleBytes")
        .invoke((Shape::from([1, 258, -1]),))
        .unwrap();
    let want: Vec<u8> = [1i64, 258, -1]
        .iter()
        .flat_map(|d| d.to_ne_bytes())
        .collect();
    assert_eq!(raw, want);
}
