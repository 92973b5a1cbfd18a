"""Shared fixtures: where the test libraries are, and the loaded libpolyffi_testing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import polyffi

REPO_ROOT = Path(__file__).resolve().parents[3]
LIB_DIR = Path(os.environ.get("POLYFFI_TEST_LIB_DIR", REPO_ROOT / "build" / "lib"))


def _load_testing():
    path = LIB_DIR / "libpolyffi_testing.so"
    if not path.exists():
        raise RuntimeError(
            f"{path} not found: build the fixtures (cmake --build build) or set "
            f"POLYFFI_TEST_LIB_DIR to the directory holding libpolyffi_testing.so")
    return polyffi.load_module(str(path))


# Loaded once for the whole run (registers testing.* globals) and kept alive.
TESTING_MODULE = _load_testing()


@pytest.fixture(scope="session")
def lib_dir() -> Path:
    return LIB_DIR


@pytest.fixture(scope="session")
def testing():
    """The testing.* fixture functions as a module."""
    return polyffi.init_api("testing")
