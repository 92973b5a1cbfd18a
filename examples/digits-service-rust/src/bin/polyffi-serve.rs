//! polyffi-serve MODEL_DIR PORT: serves every model of MODEL_DIR over the Open Inference
//! Protocol, and its language models with OpenAI's completions API, on 127.0.0.1:PORT (0: a free
//! port) until killed. Prints `listening on
//! 127.0.0.1:PORT` once ready.
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use digits_service::{app, load_dir, load_language_models};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, port) = match args.as_slice() {
        [dir, port] => match port.parse::<u16>() {
            Ok(p) => (PathBuf::from(dir), p),
            Err(_) => usage(),
        },
        _ => usage(),
    };
    let (models, language_models) = match (load_dir(&dir), load_language_models(&dir)) {
        (Ok(m), Ok(lms)) if !m.is_empty() || !lms.is_empty() => (Arc::new(m), Arc::new(lms)),
        (Ok(_), Ok(_)) => fail(format!("no model to serve in {}", dir.display())),
        (Err(e), _) | (_, Err(e)) => fail(format!("{}: {e}", dir.display())),
    };
    for m in models.values() {
        eprintln!(
            "polyffi-serve: {} ({}): {} inputs, {} outputs",
            m.name,
            m.platform,
            m.inputs.len(),
            m.outputs.len()
        );
    }
    for name in language_models.keys() {
        eprintln!("polyffi-serve: {name} (language model, /v1/completions)");
    }
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(e) => fail(format!("cannot listen on 127.0.0.1:{port}: {e}")),
    };
    println!("listening on {}", listener.local_addr().unwrap());
    std::io::stdout().flush().ok();
    let shutdown = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    };
    if let Err(e) = axum::serve(listener, app(models, language_models))
        .with_graceful_shutdown(shutdown)
        .await
    {
        fail(e.to_string());
    }
}

fn usage() -> ! {
    eprintln!("usage: polyffi-serve MODEL_DIR PORT");
    std::process::exit(2);
}

fn fail(message: String) -> ! {
    eprintln!("polyffi-serve: {message}");
    std::process::exit(1);
}
