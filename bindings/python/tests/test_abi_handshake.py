"""The ABI handshake: the extension refuses a libpolyffi whose ABI digest differs from the one
it was compiled against (a struct that grew, a changed declaration), with an ImportError naming
both digests, instead of running on a mismatched layout."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import polyffi
from polyffi import _core

from conftest import REPO_ROOT


def header_digest() -> str:
    header = (REPO_ROOT / "c_api" / "include" / "polyffi" / "c_runtime_api.h").read_text()
    m = re.search(r'^#define POLYFFI_ABI_DIGEST "([0-9a-f]{64})"$', header, re.M)
    assert m, "no POLYFFI_ABI_DIGEST in c_runtime_api.h"
    return m.group(1)


def test_extension_was_built_against_the_headers_digest():
    assert _core.ABI_DIGEST == header_digest()
    assert polyffi.runtime_version()[0] == _core.VERSION_MAJOR


def test_library_with_another_digest_is_refused_with_both_digests(lib_dir):
    variant = lib_dir / "abi_variant" / "libpolyffi.so"
    assert variant.exists(), f"{variant} not built (c_api/CMakeLists.txt, POLYFFI_BUILD_TESTS)"
    # The variant has libpolyffi's SONAME: preloaded, it is the libpolyffi the extension binds.
    env = dict(os.environ, LD_PRELOAD=str(variant))
    code = (
        "try:\n"
        "    import polyffi\n"
        "except ImportError as e:\n"
        "    print('ImportError:', e)\n"
        "    raise SystemExit(3)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    out = proc.stdout + proc.stderr
    digest = header_digest()
    assert "ImportError" in out, out
    assert "ABI mismatch" in out, out
    assert f"ABI digest {digest}" in out, out
    assert f"ABI digest variant-for-tests-{digest}" in out, out
    assert proc.returncode == 3, out
