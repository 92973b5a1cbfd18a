#!/usr/bin/env python3
"""Validate the conformance case files: schema, unique ids, ids prefixed by their area.

Usage: python3 tests/conformance/validate.py [cases_dir]
Exits non-zero and lists every problem when anything is wrong.
"""
import json
import pathlib
import sys

try:
    import jsonschema
except ImportError:  # The one dependency; say how to get it rather than a bare traceback.
    sys.exit("validate.py needs the 'jsonschema' package: python3 -m pip install jsonschema")

HERE = pathlib.Path(__file__).resolve().parent
AREAS = ("values", "calls", "errors", "callbacks", "registry", "containers", "ndarray", "modules",
         "async")


def _walk_steps(case):
    """Yield every call-like step of a case (the case itself for single-call cases)."""
    if "steps" in case:
        yield from case["steps"]
    else:
        yield case


def _semantic_problems(case):
    """Checks JSON Schema cannot express: variables bound before use, shapes match data."""
    problems = []
    bound = set()

    def visit(value, where):
        if isinstance(value, dict):
            if "var" in value and isinstance(value["var"], str) and value["var"] not in bound:
                problems.append(f"{where}: variable '{value['var']}' used before it is bound")
            if "ndarray" in value and isinstance(value["ndarray"], dict):
                nd = value["ndarray"]
                count = 1
                for dim in nd.get("shape", []):
                    count *= dim
                if count != len(nd.get("data", [])):
                    problems.append(f"{where}: ndarray shape {nd.get('shape')} needs {count} "
                                    f"elements, data has {len(nd.get('data', []))}")
            for item in value.values():
                visit(item, where)
        elif isinstance(value, list):
            for item in value:
                visit(item, where)

    for index, step in enumerate(_walk_steps(case)):
        where = f"step {index}" if "steps" in case else "case"
        for key, item in step.items():
            if key not in ("bind", "let", "release", "id", "description"):
                visit(item, where)
        if "release" in step:
            if step["release"] not in bound:
                problems.append(f"{where}: release of unbound variable '{step['release']}'")
            bound.discard(step["release"])
        for key in ("bind", "let"):
            if key in step:
                if step[key] in bound:
                    problems.append(f"{where}: variable '{step[key]}' bound twice")
                bound.add(step[key])
        expect = step.get("expect")
        if isinstance(expect, dict) and "same_as_arg" in expect:
            index_ = step["expect"]["same_as_arg"]
            if index_ >= len(step.get("args", [])):
                problems.append(f"{where}: same_as_arg {index_} but only "
                                f"{len(step.get('args', []))} arguments")
    return problems


def validate(cases_dir):
    schema = json.loads((HERE / "schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    problems = []
    seen = {}
    files = sorted(cases_dir.glob("*.json"))
    if not files:
        problems.append(f"{cases_dir}: no case files")
    total = 0
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            problems.append(f"{path.name}: cannot parse: {err}")
            continue
        for err in sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path)):
            # oneOf failures say only "not valid under any"; the deepest sub-error says why.
            while err.context:
                err = jsonschema.exceptions.best_match(err.context)
            location = "/".join(str(p) for p in err.absolute_path)
            problems.append(f"{path.name}: {location}: {err.message[:300]}")
        area = path.stem
        if area not in AREAS:
            problems.append(f"{path.name}: unknown area '{area}' (expected one of {AREAS})")
        if isinstance(data, dict) and data.get("area") != area:
            problems.append(f"{path.name}: 'area' is {data.get('area')!r}, file name says {area!r}")
        for case in data.get("cases", []) if isinstance(data, dict) else []:
            if not isinstance(case, dict) or not isinstance(case.get("id"), str):
                continue
            total += 1
            case_id = case["id"]
            if not case_id.startswith(area + "."):
                problems.append(f"{path.name}: id '{case_id}' is not prefixed by '{area}.'")
            if case_id in seen:
                problems.append(f"{path.name}: id '{case_id}' already used in {seen[case_id]}")
            seen[case_id] = path.name
            problems.extend(f"{path.name}: {case_id}: {p}" for p in _semantic_problems(case))
    for area in AREAS:
        if not (cases_dir / f"{area}.json").exists():
            problems.append(f"missing case file {area}.json")
    return problems, total, len(files)


def main(argv):
    cases_dir = pathlib.Path(argv[1]) if len(argv) > 1 else HERE / "cases"
    problems, total, nfiles = validate(cases_dir)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s) in {nfiles} case file(s)", file=sys.stderr)
        return 1
    print(f"ok: {total} cases in {nfiles} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
