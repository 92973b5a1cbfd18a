//! A Rust consumer of the published crates (ci/test-packages.sh builds it against the unpacked
//! polyffi and polyffi-sys .crate files, whose `bundled` feature compiles the packaged core):
//! `run_model MODEL_DIR`. Runs the TVM-exported graph model MODEL_DIR/factory.so, compares
//! output 0 byte for byte with what TVM's runtime recorded, and checks that the libpolyffi.so
//! mapped into this process is the one polyffi-sys built (its `links` metadata, DEP_POLYFFI_LIB_DIR,
//! which build.rs passes on as POLYFFI_PACKAGED_LIB_DIR).
use polyffi::{DataType, Device, GraphModule, Module, NDArray};
use std::path::{Path, PathBuf};

fn mapped_libpolyffi() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.find('/').map(|at| &line[at..]))
        .find(|path| path.ends_with("/libpolyffi.so"))
        .and_then(|path| std::fs::canonicalize(path).ok())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: run_model MODEL_DIR")?,
    );
    let input = std::fs::read(model.join("input_data.bin"))?;
    let want = std::fs::read(model.join("output_0.bin"))?;
    let lib = Module::load(model.join("factory.so").to_str().ok_or("path")?)?;
    let gm = GraphModule::from_factory(&lib, Device::cpu(0))?;
    let mut x = NDArray::empty(
        &[1, (input.len() / 4) as i64],
        DataType::FLOAT32,
        Device::cpu(0),
    )?;
    x.copy_from_bytes(&input)?;
    gm.set_input("data", &x)?;
    gm.run()?;
    let got = gm.get_output(0)?.to_bytes()?;
    if got != want {
        return Err("output 0 differs from TVM's output_0.bin".into());
    }
    let mapped = mapped_libpolyffi().ok_or("no libpolyffi.so is mapped")?;
    let built = std::fs::canonicalize(Path::new(env!("POLYFFI_PACKAGED_LIB_DIR")))?;
    if mapped.parent() != Some(built.as_path()) {
        return Err(format!(
            "runs {}, not polyffi-sys's {}",
            mapped.display(),
            built.display()
        )
        .into());
    }
    println!(
        "run_model: output equals TVM's ({} bytes); libpolyffi {}",
        want.len(),
        mapped.display()
    );
    Ok(())
}
