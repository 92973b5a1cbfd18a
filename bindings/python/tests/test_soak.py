"""A short run of the Python soak (tests/soak/soak.py): 20,000 cycles per phase, RSS after
warm-up within 4 MiB and the runtime's live objects back at their start after each phase."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO_ROOT


def test_soak_short(lib_dir):
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tests" / "soak" / "soak.py"), "20000", "4"],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "POLYFFI_TEST_LIB_DIR": str(lib_dir)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "soak: ok" in proc.stdout
    assert proc.stdout.count(" ok") >= 4, proc.stdout
