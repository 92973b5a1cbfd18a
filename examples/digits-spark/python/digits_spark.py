"""The digits job from PySpark: mapInArrow over polyffi.GraphModule.

Each Python worker loads the model once (a module-level holder keyed by the shipped files) and
classifies Arrow record batches: the features column (list<float>) is checked (no null row, 64
values each, no null value) and its flat float buffer is viewed as a [rows, 64] numpy array
without a copy; each graph batch is copied from that view into the model's input array once.

usage:
  python digits_spark.py generate --model-dir D --rows N [--partitions P] --out T [--master M]
  python digits_spark.py classify --in T --out P [--model-dir D --model-lib L] [--runs R]
                                  [--bad-input] [--wait-executors N] [--master M]
                                  [--conf key=value ...]
  python digits_spark.py baseline --model-dir D --model-lib L --rows N [--runs R]
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

FEATURES = 64
CLASSES = 10
GRAPH, PARAMS, LIBRARY = "graph.json", "params.bin", "libdigits_model.so"

INPUT_DDL = "id long, features array<float>"
OUTPUT_DDL = "id long, prediction int"


class Model:
    """One graph executor with its padded input and its output; one caller at a time."""

    def __init__(self, graph_path: str, params_path: str, lib_path: str) -> None:
        import polyffi

        self.lib = polyffi.load_module(lib_path)
        with open(graph_path) as f:
            graph = f.read()
        with open(params_path, "rb") as f:
            params = f.read()
        self.gm = polyffi.GraphModule.from_graph(graph, self.lib)
        self.gm.load_params(params)
        shape = tuple(self.gm.get_input("data").shape)
        if len(shape) != 2 or shape[1] != FEATURES:
            raise ValueError(f"digits-spark: the graph's input is {shape}, expected [batch, 64]")
        self.batch = shape[0]
        self.padded = np.zeros((self.batch, FEATURES), dtype=np.float32)
        self.output = np.empty((self.batch, CLASSES), dtype=np.float32)
        self.lock = threading.Lock()

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Classes of the rows of x (float32 [n, 64], C-contiguous), batch by batch."""
        out = np.empty(len(x), dtype=np.int32)
        with self.lock:
            for start in range(0, len(x), self.batch):
                part = x[start:start + self.batch]
                n = len(part)
                # One copy into the model's own input array. Arrow's buffers are read-only and
                # numpy will not export read-only memory over DLPack, so the view itself cannot
                # be handed to set_input.
                self.padded[:n] = part
                if n < self.batch:
                    self.padded[n:] = 0
                self.gm.set_input(0, self.padded)
                self.gm.run()
                self.gm.get_output(0, self.output)
                out[start:start + n] = self.output[:n].argmax(axis=1)
        return out


_lock = threading.Lock()
_models: dict = {}
_loads: dict = {}


def model_for(files: tuple) -> Model:
    """This worker's model for files (graph, params, library names as shipped): loaded once."""
    m = _models.get(files)
    if m is None:
        with _lock:
            m = _models.get(files)
            if m is None:
                from pyspark import SparkFiles

                paths = []
                for name in files:
                    p = SparkFiles.get(name)
                    if not os.path.isfile(p):
                        raise FileNotFoundError(
                            f"digits-spark: the job's file {name} is not at {p} "
                            "(ship it with --files or SparkContext.addFile)")
                    paths.append(p)
                m = Model(*paths)
                _models[files] = m
                _loads[files] = _loads.get(files, 0) + 1
    return m


def loads_of(files: tuple) -> int:
    """How many times this process loaded files' model. (Tasks must reach the holder through
    top-level functions: cloudpickle ships a closure with copies of the globals it names.)"""
    return _loads.get(files, 0)


@atexit.register
def _close_all() -> None:
    with _lock:
        _models.clear()  # the executors and the library close as their last references go


def features_matrix(batch: pa.RecordBatch) -> np.ndarray:
    """The features column as float32 [rows, 64] (a view when Arrow's buffer allows it); a row
    that is null, not 64 values long or holds a null fails, naming its id."""
    ids = batch.column(0)
    col = batch.column(1)
    if not pa.types.is_list(col.type) and not pa.types.is_large_list(col.type):
        raise TypeError(f"digits-spark: features is {col.type}, expected array<float>")
    if not pa.types.is_float32(col.type.value_type):
        raise TypeError(f"digits-spark: features is {col.type}, expected array<float>")
    if col.null_count:
        i = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise ValueError(f"digits-spark: row id={ids[i].as_py()}: features is null")
    lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
    wrong = np.flatnonzero(lengths != FEATURES)
    if len(wrong):
        i = int(wrong[0])
        raise ValueError(f"digits-spark: row id={ids[i].as_py()}: features has {lengths[i]} "
                         f"values, the model takes {FEATURES}")
    values = col.flatten()  # respects the batch's slice offset
    if values.null_count:
        k = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        raise ValueError(f"digits-spark: row id={ids[k // FEATURES].as_py()}: "
                         f"features[{k % FEATURES}] is null")
    return values.to_numpy(zero_copy_only=True).reshape(len(col), FEATURES)


def classifier(files: tuple):
    """The mapInArrow function: record batches of (id, features) -> (id, prediction)."""

    def classify(batches):
        model = None
        for b in batches:
            if b.num_rows == 0:
                continue
            x = features_matrix(b)
            if model is None:
                model = model_for(files)
            pred = model.predict(x)
            yield pa.RecordBatch.from_arrays([b.column(0), pa.array(pred, pa.int32())],
                                             names=["id", "prediction"])

    return classify


def classify(df, files: tuple = (GRAPH, PARAMS, LIBRARY)):
    """df: columns id (long), features (array<float>) -> (id, prediction)."""
    return df.select("id", "features").mapInArrow(classifier(files), OUTPUT_DDL)


def ship(spark, model_dir: str, model_lib: str) -> tuple:
    """Adds the model files to the job (SparkContext.addFile) and this module (addPyFile: the
    workers import it, so its holder is one per worker process); returns the files' names."""
    spark.sparkContext.addPyFile(os.path.abspath(__file__))
    paths = [os.path.join(model_dir, GRAPH), os.path.join(model_dir, PARAMS), model_lib]
    for p in paths:
        if not os.path.isfile(p):
            raise FileNotFoundError(f"digits-spark: model file {p} does not exist")
        spark.sparkContext.addFile(os.path.abspath(p))
    return (GRAPH, PARAMS, os.path.basename(model_lib))


def test_rows(model_dir: str) -> np.ndarray:
    return np.fromfile(os.path.join(model_dir, "test_x.bin"), dtype="<f4").reshape(-1, FEATURES)


def expected(model_dir: str) -> np.ndarray:
    """expected.json's predictions: what the C demo (build/bin/digits_demo) checks it predicts."""
    with open(os.path.join(model_dir, "expected.json")) as f:
        return np.asarray(json.load(f)["predictions"], dtype=np.int32)


def table(spark, test: np.ndarray, rows: int, partitions: int):
    """rows rows; row id i holds test row i % len(test)."""

    def repeat(batches):
        for b in batches:
            ids = b.column(0).to_numpy()
            x = np.ascontiguousarray(test[ids % len(test)]).reshape(-1)
            offsets = pa.array(np.arange(0, len(x) + 1, FEATURES, dtype=np.int32))
            feats = pa.ListArray.from_arrays(offsets, pa.array(x, pa.float32()))
            yield pa.RecordBatch.from_arrays([b.column(0), feats], names=["id", "features"])

    return spark.range(0, rows, 1, partitions).mapInArrow(repeat, INPUT_DDL)


def check(pred_df, exp: np.ndarray) -> dict:
    """Every id once, every prediction equal to exp[id % len(exp)] (counted on the executors)."""
    from pyspark.sql import functions as F

    n = len(exp)
    lookup = F.element_at(F.array(*[F.lit(int(v)) for v in exp]),
                          (F.col("id") % n + 1).cast("int"))
    r = pred_df.agg(F.count("id").alias("rows"), F.countDistinct("id").alias("distinct"),
                    F.min("id").alias("min"), F.max("id").alias("max"),
                    F.sum((F.col("prediction") != lookup).cast("long")).alias("mismatches")
                    ).first()
    return {k: (0 if r[k] is None else int(r[k])) for k in ("rows", "distinct", "min", "max",
                                                            "mismatches")}


def check_ok(c: dict, rows: int) -> bool:
    return (c["rows"] == rows and c["distinct"] == rows and c["min"] == 0
            and c["max"] == rows - 1 and c["mismatches"] == 0)


def session(master: str, name: str, conf=()):
    from pyspark.sql import SparkSession

    # The workers must import polyffi and pyarrow: run them with this interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    b = SparkSession.builder.master(master).appName(name)
    for kv in conf:
        k, _, v = kv.partition("=")
        b = b.config(k, v)
    return (b.config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
            .getOrCreate())


def worker_loads(spark, files: tuple) -> dict:
    """{python worker pid: times it loaded the model} over many small tasks."""
    parts = max(8, 4 * spark.sparkContext.defaultParallelism)

    def who(batches):
        for _ in batches:
            pass
        yield pa.RecordBatch.from_arrays(
            [pa.array([os.getpid()], pa.int64()), pa.array([loads_of(files)], pa.int64())],
            names=["pid", "loads"])

    rows = spark.range(0, parts, 1, parts).mapInArrow(who, "pid long, loads long").collect()
    return {r["pid"]: r["loads"] for r in rows}


def executors(spark) -> list:
    """host:port of every registered executor (a replaced executor comes back on a new port)."""
    infos = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
    return sorted(f"{e.host()}:{e.port()}" for e in infos)


def bad_input(spark, files: tuple, test: np.ndarray, exp: np.ndarray) -> bool:
    """Tables with a short row and a null row must fail naming the row; afterwards the same
    executors must still be there and classify correctly."""
    before = executors(spark)
    ok = True
    for rid, feats, what in [(5_000_017, [0.5] * 63, "features has 63 values"),
                             (5_000_018, None, "features is null")]:
        bad = table(spark, test, 2000, 2).union(spark.createDataFrame([(rid, feats)], INPUT_DDL))
        try:
            classify(bad, files).count()
            msg = "(no error)"
        except Exception as e:  # noqa: BLE001 - Spark wraps the worker's error
            msg = str(e)
        named = f"row id={rid}: {what}" in msg
        ok &= named
        line = next((s for s in msg.splitlines() if "Error: digits-spark:" in s), msg[:300])
        print(f"bad input: {'failed as expected' if named else 'WRONG'}: {line.strip()}")
    c = check(classify(table(spark, test, 3000, 4), files), exp)
    after = executors(spark)
    print(f"bad input: executors (and the driver) before {before}, after {after}; "
          f"a good job afterwards: {c}")
    return ok and check_ok(c, 3000) and before == after


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["generate", "classify", "baseline"])
    ap.add_argument("--master", default=os.environ.get("SPARK_MASTER", "local[2]"))
    ap.add_argument("--model-dir")
    ap.add_argument("--model-lib")
    ap.add_argument("--rows", type=int)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--in", dest="inp")
    ap.add_argument("--out")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--bad-input", action="store_true")
    ap.add_argument("--wait-executors", type=int, default=0)
    ap.add_argument("--conf", action="append", default=[], help="key=value, a Spark setting")
    a = ap.parse_args(argv)

    if a.command == "baseline":
        return baseline(a)
    spark = session(a.master, f"digits-spark {a.command} (python)", a.conf)
    try:
        if a.command == "generate":
            t0 = time.perf_counter()
            table(spark, test_rows(a.model_dir), a.rows, a.partitions) \
                .write.mode("overwrite").parquet(a.out)
            print(f"generate: {a.rows} rows in {a.partitions} partitions -> {a.out} "
                  f"({time.perf_counter() - t0:.1f} s)")
            return 0
        files = ship(spark, a.model_dir, a.model_lib) if a.model_dir else (GRAPH, PARAMS, LIBRARY)
        exp = expected(a.model_dir)
        tracker = spark.sparkContext._jsc.sc().statusTracker()
        deadline = time.monotonic() + 120
        while len(tracker.getExecutorInfos()) - 1 < a.wait_executors:
            if time.monotonic() > deadline:
                raise RuntimeError(f"fewer than {a.wait_executors} executors after 120 s")
            time.sleep(0.2)
        rows = spark.read.parquet(a.inp).count()
        executors = len(tracker.getExecutorInfos()) - 1
        print(f"classify: {rows} rows, master {spark.sparkContext.master}, "
              f"{executors} executor(s), {spark.sparkContext.defaultParallelism} default "
              "parallelism")
        rates = []
        for r in range(a.runs):
            t0 = time.perf_counter()
            classify(spark.read.parquet(a.inp), files).write.mode("overwrite").parquet(a.out)
            s = time.perf_counter() - t0
            rates.append(rows / s)
            print(f"classify: run {r + 1}: {s:.2f} s, {rows / s:.0f} rows/s, "
                  f"{1e6 * s / rows:.2f} us/row")
        # Run 1 is the cold start (Python workers, model loads): the median is over the rest.
        warm = sorted(rates[1:] or rates)
        print(f"RESULT rows={rows} executors={executors} runs={a.runs} "
              f"median_rows_per_s={warm[len(warm) // 2]:.0f} (warm runs)")
        c = check(spark.read.parquet(a.out), exp)
        ok = check_ok(c, rows)
        print(f"check: {c} -> {'OK' if ok else 'FAILED'}")
        loads = worker_loads(spark, files)
        print(f"python workers seen (pid: model loads): {loads}")
        if a.bad_input:
            ok &= bad_input(spark, files, test_rows(a.model_dir), exp)
        return 0 if ok else 1
    finally:
        spark.stop()


def baseline(a) -> int:
    """The same predict() in one Python process, rows from memory: the per-row floor."""
    m = Model(os.path.join(a.model_dir, GRAPH), os.path.join(a.model_dir, PARAMS), a.model_lib)
    test, exp = test_rows(a.model_dir), expected(a.model_dir)
    reps = -(-a.rows // len(test))
    x = np.ascontiguousarray(np.tile(test, (reps, 1))[:a.rows])
    want = np.tile(exp, reps)[:a.rows]
    ns = []
    for _ in range(max(1, a.runs)):
        t0 = time.perf_counter_ns()
        pred = m.predict(x)
        ns.append((time.perf_counter_ns() - t0) / a.rows)
        if not np.array_equal(pred, want):
            print(f"baseline: {int((pred != want).sum())} predictions differ from the C demo's")
            return 1
    med = sorted(ns)[len(ns) // 2]
    print(f"baseline: {a.rows} rows x {len(ns)} runs, batch {m.batch}, ns/row "
          f"{[round(v) for v in ns]}")
    print(f"RESULT baseline_rows={a.rows} median_ns_per_row={med:.1f} rows_per_s={1e9 / med:.0f}")
    return 0


if __name__ == "__main__":
    # Run main from the module as imported by name, not from __main__: functions of __main__
    # are pickled by value with their globals, which would give every task its own holder.
    import digits_spark

    sys.exit(digits_spark.main())
