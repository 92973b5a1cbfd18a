#!/usr/bin/env python3
"""Runs the README snippets the way a user would.

Every code block preceded by a `<!-- readme-test: LANG FILE -->` line in README.md or
bindings/*/README.md is extracted from the README (never copied into this repository), written
as FILE into a project of its own in a temporary directory outside the repository, built against
the binding that ci/test-*.sh built or installed, and run:

  c       the program, built by the README's `sh-c` block (run as written in the user's
          directory, `path/to/polyffi` being this checkout, HOME a temporary one), must print 6;
          run where the fixture library does not exist, it must fail with the loader's error.
  python  a script in its own directory, run by the venv ci/test-python.sh installed the binding
          into (build/venv-python), from the repository root.
  rust    a binary crate of its own (FILE src/main.rs, with the README's Cargo.toml
          [dependencies] and build.rs), built by cargo, then started directly, outside cargo,
          with no LD_LIBRARY_PATH.
  node    a script in a project of its own where `npm install path/to/polyffi/bindings/node`
          ran, so `require('polyffi')` resolves to the installed binding; run from the
          repository root.
  java    a class in its own package (FILE example/Hello.java), compiled with javac against the
          jar ci/test-java.sh installed into the local Maven repository, run with `java -ea`
          from the repository root.

Usage: run_snippets.py [--only c,python,...]. Exits non-zero on the first failure; a language
the READMEs show no snippet for is a failure too.
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LANGS = ["c", "python", "rust", "node", "java"]
MARK = re.compile(r"^<!-- readme-test: (\S+)(?: (\S+))? -->$")
PLACEHOLDER = "path/to/polyffi"


class Failure(Exception):
    pass


def snippets():
    """[(readme, line, tag, file, code)] for every marked block, in README order."""
    found = []
    readmes = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(ROOT + "/bindings/*/README.md"))
    for path in readmes:
        readme = os.path.relpath(path, ROOT)
        lines = open(path, encoding="utf-8").read().split("\n")
        for i, line in enumerate(lines):
            m = MARK.match(line)
            if not m:
                continue
            if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
                raise Failure(f"{readme}:{i + 1}: a readme-test mark must precede a code block")
            end = lines.index("```", i + 2)
            code = "\n".join(lines[i + 2 : end]) + "\n"
            found.append((readme, i + 1, m.group(1), m.group(2), code))
    return found


def run(cmd, cwd, env=None, expect_ok=True, timeout=1800):
    shown = cmd if isinstance(cmd, str) else " ".join(cmd)
    shown = shown.replace("\n", "\n     ")
    print(f"   $ {shown}   (in {cwd})", flush=True)
    try:
        r = subprocess.run(
            cmd, cwd=cwd, env=env, shell=isinstance(cmd, str), capture_output=True, text=True,
            timeout=timeout, executable="/bin/bash" if isinstance(cmd, str) else None,
        )
    except subprocess.TimeoutExpired:
        raise Failure(f"`{shown}` did not finish in {timeout} s") from None
    if expect_ok and r.returncode != 0:
        raise Failure(f"`{shown}` failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def one(found, tag):
    blocks = [s for s in found if s[2] == tag]
    if not blocks:
        raise Failure(f"no README block is marked `readme-test: {tag}`")
    return blocks


def check_c(found, tmp):
    (_, _, _, name, code), = one(found, "c")
    (_, _, _, _, build), = one(found, "sh-c")
    home, proj = os.path.join(tmp, "home"), os.path.join(tmp, "c-project")
    write(os.path.join(proj, name), code)
    env = dict(os.environ, HOME=home)
    script = build.replace(PLACEHOLDER, ROOT)
    r = run("set -euo pipefail\n" + script, proj, env)
    last = (r.stdout.strip().splitlines() or [""])[-1]
    if last != "6":  # the install step prints what it installs first
        raise Failure(f"the C program printed {last!r}, not 6\n{r.stdout}\n{r.stderr}")
    # The defect this guards: run where build/lib does not exist, it must say so and fail.
    exe = os.path.join(proj, os.path.splitext(name)[0])
    r = run([exe], proj, env, expect_ok=False)
    if r.returncode == 0 or "libpolyffi_testing.so" not in r.stderr or r.stdout.strip():
        raise Failure(f"without the fixture library the C program gave status {r.returncode}, "
                      f"stdout {r.stdout!r}, stderr {r.stderr!r}")
    print(f"   add3 prints 6; without the library: status {r.returncode}, {r.stderr.strip()!r}")


def check_python(found, tmp):
    py = os.path.join(ROOT, "build", "venv-python", "bin", "python")
    if not os.access(py, os.X_OK):
        raise Failure(f"{py} is missing: ci/test-python.sh (ci/python-env.sh) makes it")
    for readme, line, _, name, code in one(found, "python"):
        proj = os.path.join(tmp, "python-" + os.path.splitext(name)[0])
        write(os.path.join(proj, name), code)
        run([py, os.path.join(proj, name)], ROOT)
        print(f"   {readme}:{line} runs")


def check_rust(found, tmp):
    cargo = shutil.which("cargo") or os.path.expanduser("~/.cargo/bin/cargo")
    proj = os.path.join(tmp, "rust-hello")
    files = {name: code for _, _, tag, name, code in found if tag in ("rust", "toml")}
    for need in ("src/main.rs", "build.rs", "Cargo.toml"):
        if need not in files:
            raise Failure(f"no README block is marked `readme-test: rust|toml {need}`")
    manifest = '[package]\nname = "hello"\nversion = "0.1.0"\nedition = "2021"\n\n'
    write(os.path.join(proj, "Cargo.toml"), manifest + files["Cargo.toml"].replace(
        PLACEHOLDER, ROOT))
    write(os.path.join(proj, "src", "main.rs"), files["src/main.rs"])
    write(os.path.join(proj, "build.rs"), files["build.rs"])
    # Same dependency versions as the workspace, so nothing new needs resolving.
    shutil.copy(os.path.join(ROOT, "bindings", "rust", "Cargo.lock"), proj)
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(ROOT, "build", "cargo"))
    env.setdefault("POLYFFI_LIB_DIR", os.path.join(ROOT, "build", "lib"))
    env["PATH"] = os.path.dirname(cargo) + os.pathsep + env["PATH"]
    run([cargo, "build", "--quiet", "--offline"], proj, env)
    exe = os.path.join(env["CARGO_TARGET_DIR"], "debug", "hello")
    clean = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    r = run([exe], ROOT, clean)
    want = "add3(1, 2, 3) = 6\napply(twice, 21) = 42\n"
    if r.stdout != want:
        raise Failure(f"the Rust binary printed {r.stdout!r}, want {want!r}")
    print("   the binary starts outside cargo and prints add3 = 6, apply = 42")


def check_node(found, tmp):
    proj = os.path.join(tmp, "node-app")
    os.makedirs(proj)
    write(os.path.join(proj, "package.json"), '{"name": "node-app", "private": true}\n')
    run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
         os.path.join(ROOT, "bindings", "node")], proj)
    for readme, line, _, name, code in one(found, "node"):
        write(os.path.join(proj, name), code)
        r = run(["node", os.path.join(proj, name)], ROOT)
        print(f"   {readme}:{line} runs: {r.stdout.strip()!r}")
    # The same require from the repository root would find nothing: the install is the user's.
    resolved = run(["node", "-p", "require.resolve('polyffi')"], proj).stdout.strip()
    if not os.path.realpath(resolved).startswith(os.path.join(ROOT, "bindings", "node")):
        raise Failure(f"require('polyffi') resolved to {resolved}")


def check_java(found, tmp):
    version = open(os.path.join(ROOT, "bindings", "java", "pom.xml")).read()
    version = re.search(r"<artifactId>polyffi</artifactId>\s*<version>([^<]+)</version>", version)
    repo = os.path.expanduser("~/.m2/repository/org/polyffi/polyffi")
    jar = os.path.join(repo, version.group(1), f"polyffi-{version.group(1)}.jar")
    if not os.path.exists(jar):
        raise Failure(f"{jar} is missing: ci/test-java.sh (mvn install) puts it there")
    for readme, line, _, name, code in one(found, "java"):
        if not code.startswith("package ") or code.startswith("package org.polyffi"):
            raise Failure(f"{readme}:{line}: the Java snippet must live in a package of its own")
        src, classes = os.path.join(tmp, "java-src"), os.path.join(tmp, "java-classes")
        write(os.path.join(src, name), code)
        run(["javac", "-cp", jar, "-d", classes, os.path.join(src, name)], tmp)
        main = name[: -len(".java")].replace("/", ".")
        run(["java", "-ea", "-cp", jar + os.pathsep + classes, main], ROOT)
        print(f"   {readme}:{line} compiles in package {main.rsplit('.', 1)[0]} and runs with -ea")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(LANGS))
    langs = ap.parse_args().only.split(",")
    found = snippets()
    tmp = tempfile.mkdtemp(prefix="polyffi-readme-")
    try:
        for lang in langs:
            start = time.time()
            print(f"-- readme: {lang}", flush=True)
            globals()["check_" + lang](found, tmp)
            print(f"   ok ({time.time() - start:.0f}s)", flush=True)
    except Failure as e:
        print(f"readme snippets: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
