"""Sync fences for fenced execution: an fd that becomes readable once the work it guards is done or failed.

A fence is two fds: an eventfd that waiters poll (written once on completion and never read, so it stays
readable for every waiter) and a 4-byte memfd word holding the state, so that the state can be queried any
number of times, by any number of waiters, in any process that shares the fds (fork, fd passing).
The state moves once, from ACTIVE to SIGNALED or ERROR; later signal/set_error calls are ignored.
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import threading
import time
import weakref
from enum import IntEnum

_WORD = struct.Struct("<I")


class FenceState(IntEnum):
    """The state of a sync fence."""

    ACTIVE = 0
    SIGNALED = 1
    ERROR = 2


def _close_all(fds: tuple[int, ...]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


class SyncFence:
    """A sync fence backed by an eventfd (for waking) and a shared state word (for querying)."""

    def __init__(self, event_fd: int, state_fd: int) -> None:
        self.fd = event_fd
        self.state_fd = state_fd
        self._lock = threading.Lock()
        self._closed = False
        self._finalizer = weakref.finalize(self, _close_all, (event_fd, state_fd))

    @classmethod
    def create(cls) -> SyncFence:
        """A new fence in the ACTIVE state."""
        event_fd = os.eventfd(0, os.EFD_NONBLOCK)
        try:
            state_fd = os.memfd_create("nnfuzz-fence", 0)
        except BaseException:
            os.close(event_fd)
            raise
        try:
            os.pwrite(state_fd, _WORD.pack(FenceState.ACTIVE), 0)
            os.set_inheritable(event_fd, True)
            os.set_inheritable(state_fd, True)
        except BaseException:
            _close_all((event_fd, state_fd))
            raise
        return cls(event_fd, state_fd)

    @classmethod
    def signaled(cls) -> SyncFence:
        """A new fence that is already SIGNALED."""
        fence = cls.create()
        fence.signal()
        return fence

    def dup(self) -> SyncFence:
        """Another handle on the same fence (its own fds), as a fence crossing a process boundary would be."""
        event_fd = os.dup(self.fd)
        try:
            state_fd = os.dup(self.state_fd)
        except BaseException:
            os.close(event_fd)
            raise
        return SyncFence(event_fd, state_fd)

    def state(self) -> FenceState:
        """The current state, without consuming anything."""
        raw = os.pread(self.state_fd, _WORD.size, 0)
        if len(raw) != _WORD.size:
            return FenceState.ERROR
        (value,) = _WORD.unpack(raw)
        try:
            return FenceState(value)
        except ValueError:
            return FenceState.ERROR

    def _finish(self, final: FenceState) -> None:
        # A thread lock orders threads; a POSIX record lock (per process) orders forked processes.
        with self._lock:
            fcntl.lockf(self.state_fd, fcntl.LOCK_EX)
            try:
                if self.state() != FenceState.ACTIVE:
                    return
                os.pwrite(self.state_fd, _WORD.pack(final), 0)
            finally:
                fcntl.lockf(self.state_fd, fcntl.LOCK_UN)
            # Written after the state word, so a woken waiter always reads the final state.
            os.eventfd_write(self.fd, 1)

    def signal(self) -> None:
        """Mark the work done: SIGNALED, waking every waiter."""
        self._finish(FenceState.SIGNALED)

    def set_error(self) -> None:
        """Mark the work failed: ERROR, waking every waiter."""
        self._finish(FenceState.ERROR)

    def wait(self, timeout: float | None = None) -> FenceState:
        """Block until the fence leaves ACTIVE or `timeout` seconds pass; returns the state (ACTIVE on timeout)."""
        state = self.state()
        if state != FenceState.ACTIVE:
            return state
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while True:
            remaining_ms = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000 + 0.999))
            events = poller.poll(remaining_ms)
            state = self.state()
            if state != FenceState.ACTIVE or (events and events[0][1] & (select.POLLERR | select.POLLNVAL)):
                return state
            if deadline is not None and time.monotonic() >= deadline:
                return state
            if events:
                # Readable but still ACTIVE: someone else wrote the eventfd; do not spin on it.
                time.sleep(0.001)

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return self._closed

    def close(self) -> None:
        """Close both fds; calling it again does nothing."""
        if not self._closed:
            self._closed = True
            self._finalizer()

    def __enter__(self) -> SyncFence:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.state().name
        return f"<SyncFence fd={self.fd} {state}>"
