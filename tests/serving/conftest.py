"""The serving harness: starts `ci/serve.sh LANG DIR PORT` on a folder of fixture models.

Languages: `--lang python,node` (or POLYFFI_SERVE_LANGS); the default is python and node, plus
rust and java when their server exists in the checkout. Each server is started once per session
and killed at the end; its stderr goes to build/serving/LANG.log.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Dict, List

import pytest

ROOT = Path(__file__).resolve().parents[2]
TVM018 = ROOT / "tests" / "tvm_models" / "tvm018"
RELAX = ROOT / "tests" / "tvm_models" / "tvm027" / "relax"
DIGITS = ROOT / "examples" / "digits" / "model"
TINY_LLAMA = ROOT / "tests" / "tvm_models" / "tvm027" / "lm"
LIB_DIR = Path(os.environ.get("POLYFFI_LIB_DIR", ROOT / "build" / "lib"))
START_TIMEOUT = float(os.environ.get("POLYFFI_SERVE_START_TIMEOUT", "600"))


def present_languages() -> List[str]:
    langs = ["python", "node"]
    rust = ROOT / "examples" / "digits-service-rust"
    if (rust / "src" / "bin" / "polyffi-serve.rs").exists() or (
            rust / "Cargo.toml").exists() and "polyffi-serve" in (rust / "Cargo.toml").read_text():
        langs.append("rust")
    if any((ROOT / "examples" / "digits-jvm" / "src").rglob("examples/Serve.java")):
        langs.append("java")
    return langs


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--lang", default=os.environ.get("POLYFFI_SERVE_LANGS", ""),
                     help="comma-separated servers to test (python,node,rust,java)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "lang" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("--lang")
        langs = [s for s in chosen.split(",") if s] if chosen else present_languages()
        metafunc.parametrize("lang", langs, scope="session")


def make_model_dir(dest: Path) -> Dict[str, str]:
    """The fixture folder every server is given: stem -> what it is."""
    dest.mkdir(parents=True, exist_ok=True)
    models = {
        # TVM 0.18 exports (graph executor factory in one library).
        "tvm018_digits": TVM018 / "digits_b1" / "factory.so",
        "tvm018_multi_io": TVM018 / "multi_io_b1" / "factory.so",
        "tvm018_conv": TVM018 / "conv_b1" / "factory.so",
        # TVM 0.27 relax VM executables.
        "relax_two_outputs": RELAX / "two_outputs.so",
        "relax_dyn_batch": RELAX / "dyn_batch.so",
        "relax_digits": RELAX / "digits.so",
        "relax_mlp_params": RELAX / "mlp_params.so",
    }
    for stem, target in models.items():
        link = dest / f"{stem}.so"
        if not link.exists():
            link.symlink_to(target)
    # examples/digits: graph.json + params.bin + the kernel library built by CMake.
    digits = dest / "digits"
    digits.mkdir(exist_ok=True)
    for name, target in (("graph.json", DIGITS / "graph.json"),
                         ("params.bin", DIGITS / "params.bin"),
                         ("libdigits_model.so", LIB_DIR / "libdigits_model.so")):
        if not (digits / name).exists():
            (digits / name).symlink_to(target)
    # A language model (a folder with lm-config.json): OpenAI completions under /v1, not OIP.
    if not (dest / "tiny_llama").exists():
        (dest / "tiny_llama").symlink_to(TINY_LLAMA, target_is_directory=True)
    # Not a model: a server skips it and serves the rest.
    (dest / "notes.txt").write_text("not a model\n")
    return {k: str(v) for k, v in models.items()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, lang: str, model_dir: Path, log: Path) -> None:
        self.lang = lang
        self.port = free_port()
        self.url = f"127.0.0.1:{self.port}"
        log.parent.mkdir(parents=True, exist_ok=True)
        self.log = log
        self.proc = subprocess.Popen(
            [str(ROOT / "ci" / "serve.sh"), lang, str(model_dir), str(self.port)],
            stdout=subprocess.PIPE, stderr=open(log, "w"), text=True, start_new_session=True)
        want = f"listening on 127.0.0.1:{self.port}"
        deadline = time.monotonic() + START_TIMEOUT
        seen = []
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{lang} server exited with {self.proc.returncode}: "
                                   f"{''.join(seen)}{log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{lang} server did not print '{want}' in {START_TIMEOUT} s")
            ready, _, _ = select.select([self.proc.stdout], [], [], 1.0)
            if ready:
                line = self.proc.stdout.readline()
                seen.append(line)
                if line.strip() == want:
                    break

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("models")
    make_model_dir(d)
    return d


@pytest.fixture(scope="session")
def server(lang: str, model_dir: Path):
    s = Server(lang, model_dir, ROOT / "build" / "serving" / f"{lang}.log")
    yield s
    s.stop()


def read_tensor(path: Path, dtype: str, shape: List[int]):
    import numpy as np

    return np.fromfile(path, dtype=dtype).reshape(shape)


def load_json(path: Path):
    return json.loads(path.read_text())
