"""The shared conformance suite (tests/conformance/cases/*.json), one pytest test per case.

Honours tests/conformance/capabilities/python.json (cases listed there with a reason must
fail, and are reported as skipped), writes build/conformance/python.json (directory overridable
with POLYFFI_CONFORMANCE_OUT) and ends with the leak check on testing.live_objects().
"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import pytest

import polyffi

from conftest import LIB_DIR, REPO_ROOT
from conformance_runner import run_case

CONFORMANCE = REPO_ROOT / "tests" / "conformance"


def _load_cases():
    cases = []
    for path in sorted((CONFORMANCE / "cases").glob("*.json")):
        with open(path, encoding="utf-8") as f:
            cases.extend(json.load(f)["cases"])
    return cases


def _load_unsupported():
    path = CONFORMANCE / "capabilities" / "python.json"
    if not path.exists():
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f).get("unsupported", {})


CASES = _load_cases()
UNSUPPORTED = _load_unsupported()
RESULTS: dict = {}
_live_at_start = polyffi.get_global_func("testing.live_objects")()


def _write_results():
    out_dir = Path(os.environ.get("POLYFFI_CONFORMANCE_OUT", REPO_ROOT / "build" / "conformance"))
    out_dir.mkdir(parents=True, exist_ok=True)
    ordered = {c["id"]: RESULTS.get(c["id"], "fail") for c in CASES}
    with open(out_dir / "python.json", "w", encoding="utf-8") as f:
        json.dump(ordered, f, indent=1, ensure_ascii=False)
        f.write("\n")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case):
    failure = run_case(case, str(LIB_DIR))
    reason = UNSUPPORTED.get(case["id"])
    if reason is not None:
        if failure is None:
            RESULTS[case["id"]] = "fail"
            pytest.fail(f"{case['id']} is listed as unsupported ({reason}) but now passes")
        RESULTS[case["id"]] = "skip"
        pytest.skip(f"unsupported: {reason}")
    RESULTS[case["id"]] = "pass" if failure is None else "fail"
    if failure is not None:
        pytest.fail(failure, pytrace=False)


def test_zz_leak_check():
    """After the whole suite, the fixtures' live objects are back to where they started."""
    _write_results()
    polyffi._core.clear_error_stash()
    gc.collect()
    live = polyffi.get_global_func("testing.live_objects")()
    assert live == _live_at_start, f"testing.live_objects() {live}, was {_live_at_start}"
