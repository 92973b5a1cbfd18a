"""The PySpark job in local[2], one SparkSession for every check (Spark starts slowly).

Every prediction is compared with the C demo's (expected.json, which build/bin/digits_demo
checks it predicts)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits_spark as ds  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MODEL = os.environ.get("DIGITS_MODEL_DIR", os.path.join(ROOT, "examples", "digits", "model"))
LIB = os.environ.get("DIGITS_MODEL_LIB", os.path.join(ROOT, "build", "lib", "libdigits_model.so"))


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    spark = ds.session("local[2]", "digits-spark python test")
    spark.sparkContext.setLogLevel("FATAL")  # the bad-input jobs fail on purpose
    files = ds.ship(spark, MODEL, LIB)
    yield {"spark": spark, "files": files, "test": ds.test_rows(MODEL), "exp": ds.expected(MODEL),
           "jvm": spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid(),
           "tmp": tmp_path_factory.mktemp("digits-spark")}
    spark.stop()


def healthy(env):
    """A good job still runs in the same JVM, and every Python worker loaded the model once."""
    c = ds.check(ds.classify(ds.table(env["spark"], env["test"], 1000, 2), env["files"]),
                 env["exp"])
    assert ds.check_ok(c, 1000), c
    assert env["spark"].sparkContext._jvm.java.lang.ProcessHandle.current().pid() == env["jvm"]
    loads = ds.worker_loads(env["spark"], env["files"])
    assert loads and set(loads.values()) <= {0, 1}, loads


def failure(env, rid, feats):
    bad = ds.table(env["spark"], env["test"], 1500, 2).union(
        env["spark"].createDataFrame([(rid, feats)], ds.INPUT_DDL))
    with pytest.raises(Exception) as e:
        ds.classify(bad, env["files"]).count()
    return str(e.value)


def test_parquet_in_predictions_out_every_one_the_c_demos(env):
    spark = env["spark"]
    inp, out = str(env["tmp"] / "in.parquet"), str(env["tmp"] / "out.parquet")
    ds.table(spark, env["test"], 3000, 3).write.mode("overwrite").parquet(inp)
    assert spark.read.parquet(inp).count() == 3000
    ds.classify(spark.read.parquet(inp), env["files"]).write.mode("overwrite").parquet(out)
    c = ds.check(spark.read.parquet(out), env["exp"])
    assert c == {"rows": 3000, "distinct": 3000, "min": 0, "max": 2999, "mismatches": 0}
    # And row by row on the driver, not only the counted check.
    got = {r["id"]: r["prediction"] for r in spark.read.parquet(out).collect()}
    assert all(got[i] == env["exp"][i % len(env["exp"])] for i in range(3000))


def test_model_loaded_once_per_python_worker(env):
    for _ in range(2):
        c = ds.check(ds.classify(ds.table(env["spark"], env["test"], 800, 4), env["files"]),
                     env["exp"])
        assert ds.check_ok(c, 800), c
    loads = ds.worker_loads(env["spark"], env["files"])
    assert 1 in loads.values() and set(loads.values()) <= {0, 1}, loads


def test_empty_and_tiny_partitions(env):
    c = ds.check(ds.classify(ds.table(env["spark"], env["test"], 3, 5), env["files"]), env["exp"])
    assert ds.check_ok(c, 3), c


def test_wrong_length_row_fails_naming_the_row(env):
    msg = failure(env, 900001, [0.25] * 63)
    assert "digits-spark: row id=900001: features has 63 values, the model takes 64" in msg
    msg = failure(env, 900002, [0.25] * 65)
    assert "row id=900002: features has 65 values" in msg
    healthy(env)


def test_null_row_and_null_value_fail_naming_the_row(env):
    msg = failure(env, 900003, None)
    assert "digits-spark: row id=900003: features is null" in msg
    holey = [0.5] * 64
    holey[17] = None
    msg = failure(env, 900004, holey)
    assert "digits-spark: row id=900004: features[17] is null" in msg
    healthy(env)


def test_missing_model_file_is_a_clear_error(env):
    with pytest.raises(Exception) as e:
        ds.classify(ds.table(env["spark"], env["test"], 10, 1),
                    ("graph.json", "params.bin", "no_such_model.so")).count()
    assert "the job's file no_such_model.so is not at" in str(e.value)
    healthy(env)


def test_predict_matches_in_process(env):
    """Model.predict on the driver (no Spark): full and padded partial batches."""
    m = ds.Model(os.path.join(MODEL, ds.GRAPH), os.path.join(MODEL, ds.PARAMS), LIB)
    x = np.ascontiguousarray(np.tile(env["test"], (3, 1))[:1000])
    assert np.array_equal(m.predict(x), np.tile(env["exp"], 3)[:1000])
