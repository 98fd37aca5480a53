"""Sync fences: waits time out while active, every waiter sees the final state, signals cross threads and fork."""

from __future__ import annotations

import os
import select
import threading
import time

import pytest

from harness.hal.fence import FenceState, SyncFence

SLACK = 0.5  # seconds of scheduling slack on a loaded 2-core machine


def test_wait_on_an_active_fence_times_out_and_reports_active():
    with SyncFence.create() as fence:
        start = time.monotonic()
        assert fence.wait(0.2) == FenceState.ACTIVE
        elapsed = time.monotonic() - start
        assert 0.2 <= elapsed < 0.2 + SLACK
        assert fence.state() == FenceState.ACTIVE
        assert fence.wait(0) == FenceState.ACTIVE


def test_a_signalled_fence_is_seen_by_several_waiters_and_repeated_queries():
    with SyncFence.create() as fence:
        results: list[FenceState] = []
        lock = threading.Lock()

        def waiter() -> None:
            state = fence.wait(10)
            with lock:
                results.append(state)

        threads = [threading.Thread(target=waiter) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.05)
        fence.signal()
        for t in threads:
            t.join(10)
        assert results == [FenceState.SIGNALED] * 4
        # Later waiters and queries see the same state: nothing was consumed.
        for _ in range(3):
            assert fence.state() == FenceState.SIGNALED
            assert fence.wait(0) == FenceState.SIGNALED


def test_an_error_fence_reports_error_and_stays_in_error():
    with SyncFence.create() as fence:
        fence.set_error()
        assert fence.state() == FenceState.ERROR
        assert fence.wait(1) == FenceState.ERROR
        fence.signal()  # the first final state wins
        assert fence.wait(None) == FenceState.ERROR


def test_signal_from_another_thread_wakes_a_waiter():
    with SyncFence.create() as fence:
        timer = threading.Timer(0.1, fence.signal)
        timer.start()
        start = time.monotonic()
        assert fence.wait(10) == FenceState.SIGNALED
        assert time.monotonic() - start < 0.1 + SLACK
        timer.join()


def test_signal_from_a_forked_process_wakes_a_waiter_in_the_parent():
    with SyncFence.create() as fence:
        pid = os.fork()
        if pid == 0:  # child
            try:
                time.sleep(0.1)
                fence.signal()
            finally:
                os._exit(0)
        try:
            start = time.monotonic()
            assert fence.wait(10) == FenceState.SIGNALED
            assert time.monotonic() - start < 5
        finally:
            os.waitpid(pid, 0)


def test_error_set_in_a_forked_process_is_seen_by_the_parent():
    with SyncFence.create() as fence:
        pid = os.fork()
        if pid == 0:  # child
            try:
                fence.set_error()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        assert fence.wait(5) == FenceState.ERROR


def test_the_fd_becomes_readable_once_signalled():
    with SyncFence.create() as fence:
        assert select.select([fence.fd], [], [], 0)[0] == []
        fence.signal()
        assert select.select([fence.fd], [], [], 0)[0] == [fence.fd]


def test_signaled_convenience_and_idempotent_close():
    fence = SyncFence.signaled()
    assert fence.state() == FenceState.SIGNALED
    fd = fence.fd
    fence.close()
    fence.close()
    assert fence.closed
    with pytest.raises(OSError):
        os.fstat(fd)


def test_a_duplicate_sees_the_same_fence_and_closes_independently() -> None:
    original = SyncFence.create()
    copy = original.dup()
    assert copy.fd != original.fd
    copy.close()
    original.signal()  # the original still works after its duplicate is gone
    again = original.dup()
    assert again.wait(1.0) == FenceState.SIGNALED
    original.close()
    assert again.state() == FenceState.SIGNALED
    again.close()
