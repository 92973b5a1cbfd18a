#!/usr/bin/env python3
"""Print the conformance matrix (cases by binding) and exit non-zero on any gap.

Usage: python3 tests/conformance/matrix.py [results_dir] [--require b1,b2,...]
       (results_dir defaults to build/conformance)

results_dir holds one <binding>.json per runner ({"case.id": "pass"|"fail"|"skip"}). A gap is a
case that is missing or not passing in a present binding and is not listed, with a reason, in
tests/conformance/capabilities/<binding>.json. A listed case that passes is a gap too (the list
is stale), as is a "skip" that the capabilities file does not explain. With --require, a named
binding whose results file is missing (its runner never ran or died early) is a gap as well.
"""
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
AREAS = ("values", "calls", "errors", "callbacks", "registry", "containers", "ndarray", "modules")
ORDER = ("c", "python", "rust", "node", "java")  # known bindings first, any others after


def load_cases(cases_dir):
    """Case ids grouped by area, in file order."""
    by_area = {}
    for path in sorted(cases_dir.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        by_area[path.stem] = [case["id"] for case in data["cases"]]
    ordered = {area: by_area.pop(area) for area in AREAS if area in by_area}
    ordered.update(by_area)
    return ordered


def load_capabilities(binding):
    path = HERE / "capabilities" / f"{binding}.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return dict(data.get("unsupported", {}))


def parse_args(argv):
    """(results_dir, required bindings) from argv."""
    results_dir, required = pathlib.Path("build/conformance"), []
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg == "--require" and args:
            required = [b for b in args.pop(0).split(",") if b]
        elif arg.startswith("--require="):
            required = [b for b in arg.split("=", 1)[1].split(",") if b]
        else:
            results_dir = pathlib.Path(arg)
    return results_dir, required


def main(argv):
    results_dir, required = parse_args(argv)
    cases = load_cases(HERE / "cases")
    all_ids = [case_id for ids in cases.values() for case_id in ids]
    files = sorted(results_dir.glob("*.json"),
                   key=lambda p: (ORDER.index(p.stem) if p.stem in ORDER else len(ORDER), p.stem))
    absent = [b for b in required if not (results_dir / f"{b}.json").exists()]
    for b in absent:
        print(f"{b}: no results file {results_dir / (b + '.json')} (its runner did not finish)",
              file=sys.stderr)
    if not files:
        print(f"no results in {results_dir} (run a conformance runner first)", file=sys.stderr)
        return 1
    bindings, results, unsupported = [], {}, {}
    for path in files:
        try:
            results[path.stem] = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as err:
            print(f"{path}: not JSON: {err}", file=sys.stderr)
            return 1
        bindings.append(path.stem)
        unsupported[path.stem] = load_capabilities(path.stem)

    gaps = {b: [] for b in bindings}
    for b in bindings:
        for case_id in all_ids:
            status = results[b].get(case_id, "missing")
            listed = case_id in unsupported[b]
            if listed and status == "pass":
                gaps[b].append((case_id, "passes but is listed as unsupported"))
            elif not listed and status != "pass":
                gaps[b].append((case_id, status))
        for case_id in sorted(set(results[b]) - set(all_ids)):
            gaps[b].append((case_id, "result for an unknown case"))

    width = max([len("area")] + [len(a) for a in cases] + [len("total")]) + 2
    # Wide enough for the binding's name and for its total cell ("324/330 (6u)").
    total = str(len(all_ids))
    col = max(12, max(len(b) for b in bindings) + 2, 2 * len(total) + 9)
    print("area".ljust(width) + "cases".rjust(7) + "".join(b.rjust(col) for b in bindings))
    print("-" * (width + 7 + col * len(bindings)))
    totals = {b: [0, 0] for b in bindings}  # passing, unsupported
    for area, ids in cases.items():
        row = area.ljust(width) + str(len(ids)).rjust(7)
        for b in bindings:
            passing = sum(1 for i in ids if results[b].get(i) == "pass")
            skipped = sum(1 for i in ids if i in unsupported[b] and results[b].get(i) != "pass")
            totals[b][0] += passing
            totals[b][1] += skipped
            cell = f"{passing}/{len(ids)}" + (f" ({skipped}u)" if skipped else "")
            row += cell.rjust(col)
        print(row)
    print("-" * (width + 7 + col * len(bindings)))
    row = "total".ljust(width) + str(len(all_ids)).rjust(7)
    for b in bindings:
        passing, skipped = totals[b]
        row += (f"{passing}/{len(all_ids)}" + (f" ({skipped}u)" if skipped else "")).rjust(col)
    print(row)
    print("(Nu) = listed as unsupported in capabilities/<binding>.json")

    bad = False
    for b in bindings:
        if gaps[b]:
            bad = True
            print(f"\n{b}: {len(gaps[b])} gap(s)")
            for case_id, why in gaps[b]:
                reason = unsupported[b].get(case_id)
                print(f"  {case_id}: {why}" + (f" [listed: {reason}]" if reason else ""))
    for b in bindings:
        for case_id, reason in sorted(unsupported[b].items()):
            if case_id not in all_ids:
                bad = True
                print(f"{b}: capabilities list unknown case {case_id} ({reason})")
    if not bad and not absent:
        print(f"\nno gaps: {len(bindings)} binding(s) x {len(all_ids)} cases")
    return 1 if bad or absent else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
