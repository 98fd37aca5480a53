"""D19: concurrent reads of one driver buffer all see its content; concurrent writes never crash or block.

The writers test states more than D19 asks because this driver documents copy-on-write: every read returns
one whole content some writer stored, never a mixture.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np

from harness.hal import ErrorStatus, MeasureTiming
from tests.driver.conftest import prepared
from tests.driver.memory_domain.helpers import A, B, Buf, Out, allocated, copy_in, copy_out, mixed_request
from tests.driver.models import add_model

THREADS = 8
ROUNDS = 25
LIMIT_S = 60.0


def run_threads(workers: list[Callable[[], None]]) -> list[BaseException]:
    """Start all workers together, wait at most LIMIT_S in all; the exceptions they raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(workers))

    def wrap(work: Callable[[], None]) -> Callable[[], None]:
        def body() -> None:
            try:
                start.wait(LIMIT_S)
                work()
            except BaseException as e:  # reported by the test, not lost in the thread
                errors.append(e)

        return body

    threads = [threading.Thread(target=wrap(w), daemon=True) for w in workers]
    for t in threads:
        t.start()
    deadline = time.monotonic() + LIMIT_S
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), f"workers still running after {LIMIT_S} s"
    return errors


def test_eight_threads_copying_out_at_once_all_see_the_content(device) -> None:
    pm = prepared(device, add_model())
    buffer, _ = allocated(device, [pm], inputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    results: list[tuple[ErrorStatus, bytes]] = []

    def reader() -> None:
        for _ in range(ROUNDS):
            results.append(copy_out(buffer, A.nbytes))

    assert run_threads([reader] * THREADS) == []
    assert len(results) == THREADS * ROUNDS
    assert set(results) == {(ErrorStatus.NONE, A.tobytes())}


def test_concurrent_executions_read_one_input_buffer(device) -> None:
    pm = prepared(device, add_model())
    buffer, token = allocated(device, [pm], inputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    sums: list[bytes] = []

    def executor() -> None:
        for _ in range(ROUNDS):
            with mixed_request([Buf(token), B], [Out(A.nbytes)]) as mr:
                status, _, _ = pm.execute_synchronously(mr.request, MeasureTiming.NO, None, None)
                assert status == ErrorStatus.NONE
                sums.append(mr.output(0, [2, 2]).tobytes())

    assert run_threads([executor] * 4 + [lambda: copy_out(buffer, A.nbytes)] * 4) == []
    assert set(sums) == {(A + B).tobytes()}


def test_concurrent_writers_and_readers_finish_and_see_whole_contents(device) -> None:
    pm = prepared(device, add_model())
    buffer, token = allocated(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    written = {A.tobytes(), (A + B).tobytes()} | {(A * k).tobytes() for k in range(THREADS)}
    seen: list[bytes] = []

    def copier(k: int) -> Callable[[], None]:
        def work() -> None:
            for _ in range(ROUNDS):
                assert copy_in(buffer, A * k) == ErrorStatus.NONE

        return work

    def executor() -> None:
        for _ in range(ROUNDS):
            with mixed_request([A, B], [Buf(token)]) as mr:
                assert pm.execute_synchronously(mr.request, MeasureTiming.NO, None, None)[0] == ErrorStatus.NONE

    def reader() -> None:
        for _ in range(ROUNDS):
            status, raw = copy_out(buffer, A.nbytes)
            assert status == ErrorStatus.NONE
            seen.append(raw)

    workers = [copier(k) for k in range(THREADS)] + [executor] * 2 + [reader] * 2
    assert run_threads(workers) == []
    assert seen and set(seen) <= written
    status, final = copy_out(buffer, A.nbytes)
    assert status == ErrorStatus.NONE and final in written
    assert np.frombuffer(final, np.float32).shape == (4,)
