//! digits-service [--addr HOST:PORT] [--lib PATH/libdigits_model.so] [--model-dir DIR]
//!
//! Serves POST /predict ({"rows": [[64 numbers], ...]} -> {"classes", "probabilities"}) and
//! GET /health. Port 0 picks a free port; the first line printed says where it listens.
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use digits_service::{app, default_paths, Model};

fn usage() -> ! {
    eprintln!("usage: digits-service [--addr HOST:PORT] [--lib PATH] [--model-dir DIR]");
    std::process::exit(2);
}

#[tokio::main]
async fn main() {
    let (mut lib, mut model_dir) = default_paths();
    let mut addr = "127.0.0.1:8080".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--addr" => addr = value,
            "--lib" => lib = PathBuf::from(value),
            "--model-dir" => model_dir = PathBuf::from(value),
            _ => usage(),
        }
    }
    let model = match Model::load(&lib, &model_dir) {
        Ok(m) => Arc::new(m),
        Err(e) => {
            eprintln!(
                "digits-service: cannot load the model ({}): {e}",
                lib.display()
            );
            std::process::exit(1);
        }
    };
    let listener = match tokio::net::TcpListener::bind(&addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("digits-service: cannot listen on {addr}: {e}");
            std::process::exit(1);
        }
    };
    println!("listening on http://{}", listener.local_addr().unwrap());
    std::io::stdout().flush().ok();
    let shutdown = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    };
    if let Err(e) = axum::serve(listener, app(model))
        .with_graceful_shutdown(shutdown)
        .await
    {
        eprintln!("digits-service: {e}");
        std::process::exit(1);
    }
}
