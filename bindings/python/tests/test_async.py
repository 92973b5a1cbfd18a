"""Async calls on the core's worker pool: ``await f.call_async(...)``, ``gm.run_async``,
``vm.invoke_async``. Results and errors equal the synchronous ones; the event loop stays free;
cancelling the task cancels a call that has not started and reports one that has; a full queue
is a QueueFullError at submit."""

import asyncio
import json
import pathlib
import threading

import numpy as np
import pytest

import polyffi

ROOT = pathlib.Path(__file__).resolve().parents[3]
TVM018 = ROOT / "tests" / "tvm_models" / "tvm018"
RELAX = ROOT / "tests" / "tvm_models" / "tvm027" / "relax"


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


def load_tensor(directory, desc):
    return np.fromfile(directory / desc["file"], dtype=desc["dtype"]).reshape(desc["shape"])


class Blocker:
    """A Python callback that holds a pool worker until released (testing.apply calls it)."""

    def __init__(self):
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()
        self.fn = polyffi.convert(self._body)

    def _body(self):
        self.entered.release()
        self.release.wait(60)
        return 1


def test_call_async_result_equals_sync(testing):
    async def main():
        got = await testing.add3.call_async(1, 20, 300)
        text = await testing.echo.call_async("héllo")
        raw = await testing.echo.call_async(b"\x00\x01")
        return got, text, raw

    got, text, raw = run(main())
    assert got == testing.add3(1, 20, 300) == 321
    assert text == "héllo"
    assert raw == b"\x00\x01"


def test_call_async_error_is_the_same_typed_error(testing):
    with pytest.raises(ValueError, match="bad value 7") as sync:
        testing.raise_error("ValueError", "bad value 7")

    async def main():
        await testing.raise_error.call_async("ValueError", "bad value 7")

    with pytest.raises(ValueError, match="bad value 7") as got:
        run(main())
    assert type(got.value) is type(sync.value)


def test_callback_into_python_during_an_async_call(testing):
    seen = []

    def cb(x):
        seen.append((x, threading.get_ident()))
        return x * 2

    async def main():
        return await testing.apply.call_async(cb, 21)

    assert run(main()) == 42
    assert seen[0][0] == 21 and seen[0][1] != threading.get_ident()  # on a pool worker


def test_python_exception_in_a_callback_arrives_typed(testing):
    def cb():
        raise KeyError("from the callback")

    async def main():
        await testing.apply.call_async(cb)

    with pytest.raises(KeyError, match="from the callback"):
        run(main())


def test_arguments_stay_alive_until_completion(testing):
    async def main():
        # The array and the string exist only in the call's argument tuple.
        return await testing.nd_sum.call_async(np.arange(1000, dtype=np.float64))

    assert run(main()) == sum(range(1000))


def test_event_loop_stays_free_while_a_call_runs(testing):
    ticks = []

    async def ticker(stop):
        while not stop.is_set():
            ticks.append(1)
            await asyncio.sleep(0.005)

    async def main():
        stop = asyncio.Event()
        t = asyncio.create_task(ticker(stop))
        await testing.sleep_ms.call_async(300)
        n = len(ticks)
        stop.set()
        await t
        return n

    assert run(main()) >= 2  # the loop ran other tasks while the call was on the pool


def test_cancel_before_start_never_runs(testing):
    workers, _, _ = polyffi.configure_async()
    blockers = [Blocker() for _ in range(workers)]
    ran = []

    async def main():
        holds = [asyncio.ensure_future(testing.apply.call_async(b.fn)) for b in blockers]
        loop = asyncio.get_running_loop()
        for b in blockers:
            await loop.run_in_executor(None, b.entered.acquire)
        late = asyncio.ensure_future(testing.apply.call_async(lambda: ran.append(1)))
        await asyncio.sleep(0)  # submitted: queued behind the blocked workers
        assert polyffi.configure_async()[2] == 1
        late.cancel()
        with pytest.raises(asyncio.CancelledError) as err:
            await late
        for b in blockers:
            b.release.set()
        assert await asyncio.gather(*holds) == [1] * workers
        return err.value

    err = run(main())
    assert "before it started" in str(err)
    assert ran == []
    assert polyffi.configure_async()[2] == 0


def test_cancel_of_a_started_call_is_reported(testing):
    b = Blocker()

    async def main():
        task = asyncio.ensure_future(testing.apply.call_async(b.fn))
        await asyncio.get_running_loop().run_in_executor(None, b.entered.acquire)
        task.cancel()
        with pytest.raises(asyncio.CancelledError) as err:
            await task
        b.release.set()
        return err.value

    assert "already started" in str(run(main()))


def test_full_queue_is_a_queue_full_error(testing):
    workers, _, _ = polyffi.configure_async()
    blockers = [Blocker() for _ in range(workers)]

    async def main():
        holds = [asyncio.ensure_future(testing.apply.call_async(b.fn)) for b in blockers]
        loop = asyncio.get_running_loop()
        for b in blockers:
            await loop.run_in_executor(None, b.entered.acquire)
        # Every worker is held: from here on, submitted calls wait in the queue.
        assert polyffi.configure_async(0, 1)[1] == 1
        queued = asyncio.ensure_future(testing.add3.call_async(1, 2, 3))
        await asyncio.sleep(0)
        with pytest.raises(polyffi.QueueFullError, match="limit of 1"):
            await testing.add3.call_async(4, 5, 6)
        for b in blockers:
            b.release.set()
        await asyncio.gather(*holds)
        return await queued

    try:
        assert run(main()) == 6
    finally:
        polyffi.configure_async(0, 1024)


def test_graph_run_async_equals_run():
    d = TVM018 / "digits_b1"
    io = json.loads((d / "io.json").read_text())
    x = load_tensor(d, io["inputs"][0])
    want = load_tensor(d, io["outputs"][0])
    gm = polyffi.GraphModule.from_factory(polyffi.load_module(d / "factory.so"))
    name = io["inputs"][0]["name"]

    async def main():
        await gm.run_async(**{name: x})
        return gm.get_output(0).numpy()

    assert np.array_equal(run(main()), want)


def test_vm_invoke_async_equals_invoke_many_at_once():
    io = json.loads((RELAX / "digits" / "io.json").read_text())
    r = io["runs"][0]
    inputs = [load_tensor(RELAX / "digits", desc) for desc in r["inputs"]]
    vm = polyffi.VirtualMachine(polyffi.load_module(RELAX / r["library"]))
    want = vm.invoke("forward", *inputs).numpy()

    async def main():
        outs = await asyncio.gather(*[vm.invoke_async("forward", *inputs) for _ in range(8)])
        return [o.numpy() for o in outs]

    for got in run(main()):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("model", ["graph", "vm"])
def test_cancelled_call_stops_a_model_run_at_its_next_check(testing, model):
    """A started call that was cancelled: a graph run (between nodes) or a VM call (before its
    next call instruction) made inside it fails with a CancelledError."""
    if model == "graph":
        d = TVM018 / "digits_b1"
        io = json.loads((d / "io.json").read_text())
        x = load_tensor(d, io["inputs"][0])
        gm = polyffi.GraphModule.from_factory(polyffi.load_module(d / "factory.so"))
        gm.set_input(io["inputs"][0]["name"], x)
        run_model = gm.run
    else:
        io = json.loads((RELAX / "digits" / "io.json").read_text())
        r = io["runs"][0]
        inputs = [load_tensor(RELAX / "digits", desc) for desc in r["inputs"]]
        vm = polyffi.VirtualMachine(polyffi.load_module(RELAX / r["library"]))
        run_model = lambda: vm.invoke("forward", *inputs)  # noqa: E731
    run_model()  # runs fine outside an async call
    entered, go, finished = threading.Semaphore(0), threading.Event(), threading.Event()
    seen = []

    def body():
        entered.release()
        go.wait(60)
        try:
            run_model()
            seen.append(None)
        except polyffi.FFIError as e:
            seen.append(e)
        finally:
            finished.set()

    async def main():
        task = asyncio.ensure_future(testing.apply.call_async(body))
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, entered.acquire)
        task.cancel()
        with pytest.raises(asyncio.CancelledError, match="already started"):
            await task
        go.set()
        await loop.run_in_executor(None, finished.wait, 60)

    run(main())
    assert len(seen) == 1 and seen[0] is not None
    assert seen[0].kind == "CancelledError"
    assert "cancelled while it ran" in str(seen[0])
