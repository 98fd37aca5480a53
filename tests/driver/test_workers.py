"""The device's worker pool: jobs reuse idle threads, a blocked job never holds up another, threads are daemons."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from driver_under_test._workers import WorkerPool

WAIT_S = 5.0


def _run_and_wait(pool: WorkerPool, fn: Callable[[], object]) -> None:
    done = threading.Event()

    def job() -> None:
        fn()
        done.set()

    pool.submit(job)
    assert done.wait(WAIT_S)


def test_a_job_runs_on_a_daemon_thread_that_is_reused_for_the_next_one() -> None:
    pool = WorkerPool("test-worker")
    seen: list[threading.Thread] = []
    for _ in range(5):
        _run_and_wait(pool, lambda: seen.append(threading.current_thread()))
        # Let the thread park itself as idle before the next job comes.
        deadline = time.monotonic() + WAIT_S
        while pool._idle == [] and time.monotonic() < deadline:
            time.sleep(0.001)
    assert all(t.daemon for t in seen)
    assert len({id(t) for t in seen}) == 1
    assert pool.threads == 1


def test_a_blocked_job_does_not_keep_the_next_job_from_running() -> None:
    pool = WorkerPool("test-worker")
    release = threading.Event()
    pool.submit(release.wait, WAIT_S)
    _run_and_wait(pool, lambda: None)
    assert pool.threads == 2
    release.set()


def test_past_the_bound_jobs_wait_for_a_free_thread() -> None:
    pool = WorkerPool("test-worker", max_threads=1)
    release = threading.Event()
    ran = threading.Event()
    pool.submit(release.wait, WAIT_S)
    pool.submit(ran.set)
    assert not ran.wait(0.1)
    assert pool.threads == 1
    release.set()
    assert ran.wait(WAIT_S)


def test_an_idle_thread_ends_after_its_idle_time() -> None:
    pool = WorkerPool("test-worker", idle_exit_s=0.05)
    _run_and_wait(pool, lambda: None)
    deadline = time.monotonic() + WAIT_S
    while pool.threads and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.threads == 0
    _run_and_wait(pool, lambda: None)  # and the pool starts a new one when work comes again


def test_an_exception_in_a_job_is_reported_and_the_thread_keeps_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    reported: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: reported.append(args.exc_value))
    pool = WorkerPool("test-worker")

    def boom() -> None:
        raise ValueError("boom")

    pool.submit(boom)
    _run_and_wait(pool, lambda: None)
    assert [str(e) for e in reported] == ["boom"]
    assert pool.threads == 1
