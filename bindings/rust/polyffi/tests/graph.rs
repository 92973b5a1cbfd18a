//! The digits model through GraphModule: the same predictions as the C demo and train.py
//! (examples/digits/model/expected.json).
mod common;

use ndarray::{ArrayD, IxDyn};
use polyffi::{Device, GraphModule, Module, NDArray};

fn model_dir() -> std::path::PathBuf {
    common::repo_root().join("examples/digits/model")
}

fn read_f32(name: &str) -> Vec<f32> {
    std::fs::read(model_dir().join(name))
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

fn expected() -> Vec<usize> {
    let text = std::fs::read_to_string(model_dir().join("expected.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap() as usize)
        .collect()
}

fn argmax(row: &[f32]) -> usize {
    row.iter()
        .enumerate()
        .fold(0, |best, (i, &x)| if x > row[best] { i } else { best })
}

fn executor(graph: &str) -> GraphModule {
    let lib = Module::load(common::lib_path("digits_model")).unwrap();
    let json = std::fs::read_to_string(model_dir().join(graph)).unwrap();
    let g = GraphModule::create(&json, &lib, Device::cpu(0)).unwrap();
    g.load_params(&std::fs::read(model_dir().join("params.bin")).unwrap())
        .unwrap();
    g
}

#[test]
fn batched_predictions_match_c_and_python() {
    let x = read_f32("test_x.bin");
    let want = expected();
    let n = want.len();
    assert_eq!(x.len(), n * 64);
    let g = executor("graph.json");
    assert_eq!(g.get_num_outputs().unwrap(), 1);
    assert_eq!(g.get_input_index("data").unwrap(), 0);
    let input = NDArray::from_slice(&x, &[n as i64, 64]).unwrap();
    g.set_input("data", &input).unwrap();
    g.run().unwrap();
    let out = g.get_output(0).unwrap();
    assert_eq!(out.shape(), &[n as i64, 10]);
    let probs = out.as_slice::<f32>().unwrap();
    let got: Vec<usize> = probs.chunks_exact(10).map(argmax).collect();
    assert_eq!(got, want);
    let expected_probs = read_f32("expected_probs.bin");
    let worst = probs
        .iter()
        .zip(&expected_probs)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(worst < 1e-5, "max |p - p_numpy| = {worst}");
}

#[test]
fn batch_one_with_ndarray_views_zero_copy() {
    let x = read_f32("test_x.bin");
    let want = expected();
    let g = executor("graph_b1.json");
    let mut out = ArrayD::<f32>::zeros(IxDyn(&[1, 10]));
    for (i, row) in x.chunks_exact(64).enumerate() {
        let input = ndarray::ArrayView::from_shape(IxDyn(&[1, 64]), row).unwrap();
        g.set_input(0usize, input).unwrap();
        g.run().unwrap();
        g.get_output_into(0, out.view_mut()).unwrap();
        assert_eq!(argmax(out.as_slice().unwrap()), want[i], "sample {i}");
    }
}

#[test]
fn bad_inputs_are_errors() {
    let g = executor("graph_b1.json");
    let wrong = NDArray::from_slice(&[0f32; 32], &[1, 32]).unwrap();
    assert!(g.set_input("data", &wrong).is_err());
    assert!(g.set_input("no_such_input", &wrong).is_err());
    assert!(g.get_output(5).is_err());
    assert!(g.load_params(b"not params").is_err());
}
