#!/usr/bin/env python3
"""Prints the long-run table of docs/reliability.md from ci/fuzz-long.sh's logs.

    python3 tests/fuzz/long_run_table.py [build-fuzz/long]

A target may have several sessions (<target>.part1.log, then <target>.log), each resuming from
the same corpus directory; executions and times add up, coverage is the last session's.
"""
import datetime
import glob
import os
import re
import sys

TARGETS = ["graph_json", "params", "dtype", "args", "dlpack", "module_blob", "library_bin",
           "relax_exec", "globals"]


def when(text, word):
    m = re.search(word + r" (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)", text)
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%SZ") if m else None


def session(path):
    text = open(path, errors="replace").read()
    start, end = when(text, "started"), when(text, "finished")
    units = re.findall(r"stat::number_of_executed_units: (\d+)", text)
    lines = re.findall(r"^#(\d+)\s+\S+\s+cov: (\d+) ft: (\d+) corp: (\d+)/", text, re.M)
    execs = int(units[-1]) if units else (int(lines[-1][0]) if lines else 0)
    cov, ft, corp = lines[-1][1:] if lines else ("?", "?", "?")
    rc = re.search(r"finished \S+ rc=(\d+)", text)
    commit = re.search(r" at ([0-9a-f]+)$", text.splitlines()[0])
    return {"start": start, "end": end, "execs": execs, "cov": cov, "ft": ft, "corp": corp,
            "rc": rc.group(1) if rc else "running", "commit": commit.group(1) if commit else "?"}


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "build-fuzz/long"
    artifacts = os.path.join(os.path.dirname(d.rstrip("/")), "artifacts")
    print("| target | sessions | wall time | executions | mean exec/s | edges (cov) | features"
          " (ft) | corpus | crashes | HEAD at start |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for t in TARGETS:
        paths = sorted(glob.glob(os.path.join(d, t + ".part*.log"))) + [os.path.join(d, t + ".log")]
        sessions = [session(p) for p in paths if os.path.exists(p)]
        if not sessions:
            continue
        secs = sum(((s["end"] or datetime.datetime.utcnow()) - s["start"]).total_seconds()
                   for s in sessions if s["start"])
        execs = sum(s["execs"] for s in sessions)
        last = sessions[-1]
        crashes = len(glob.glob(os.path.join(artifacts, "long-" + t + "-*")))
        rcs = ",".join(s["rc"] for s in sessions)
        print(f"| `fuzz_{t}` | {len(sessions)} (rc {rcs}) | {secs / 60:.0f} min | {execs:,} |"
              f" {execs / max(secs, 1):.0f} | {last['cov']} | {last['ft']} | {last['corp']} |"
              f" {crashes} | {last['commit']} |")


if __name__ == "__main__":
    main()
