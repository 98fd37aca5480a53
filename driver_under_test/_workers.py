"""A device's worker threads: asynchronous work runs on an idle thread, so no call pays for starting one.

A job goes to a thread that waits for work; only when none is idle does the pool start a new one (up to
MAX_THREADS; past that, jobs wait in a backlog for the first thread to come free). A job that blocks (a fenced
execution waiting for its fences, a kernel that hangs) therefore never keeps another job from running while the
bound is not reached. The threads are daemons, so a hung job never holds up interpreter exit (which is why this
is not a ThreadPoolExecutor: its threads are joined at exit). A thread left idle for IDLE_EXIT_S ends, so pools of
devices no longer used do not keep threads forever.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import deque
from collections.abc import Callable

# Far more than one device ever runs at once; a bound only so that a flood of hanging jobs cannot exhaust threads.
MAX_THREADS = 128
IDLE_EXIT_S = 10.0

Job = tuple[Callable[..., object], tuple[object, ...]]

_POOLS: weakref.WeakSet[WorkerPool] = weakref.WeakSet()


class _Idle:
    """An idle thread's mailbox: the job handed to it and the lock it sleeps on until then."""

    __slots__ = ("job", "wake")

    def __init__(self) -> None:
        self.job: Job | None = None
        self.wake = threading.Lock()
        self.wake.acquire()


class WorkerPool:
    """Daemon threads that run submitted jobs; one per device, shared by its prepared models."""

    def __init__(self, name: str, max_threads: int = MAX_THREADS, idle_exit_s: float = IDLE_EXIT_S) -> None:
        self._name = name
        self._max_threads = max_threads
        self._idle_exit_s = idle_exit_s
        self._reset()
        _POOLS.add(self)

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Idle] = []  # most recently idle last: it is handed the next job while still warm
        self._backlog: deque[Job] = deque()
        self._threads = 0
        self._started = 0

    @property
    def threads(self) -> int:
        """Threads the pool runs now (busy or idle)."""
        with self._lock:
            return self._threads

    def submit(self, fn: Callable[..., object], *args: object) -> None:
        """Run fn(*args) on a worker thread; RuntimeError if no thread can be started."""
        job = (fn, args)
        with self._lock:
            if self._idle:
                idle = self._idle.pop()
                idle.job = job
                idle.wake.release()
                return
            if self._threads >= self._max_threads:
                self._backlog.append(job)
                return
            self._threads += 1
            self._started += 1
            name = f"{self._name}-{self._started}"
        # The job travels in the mailbox, not in the Thread's arguments, which live as long as the thread.
        mailbox = _Idle()
        mailbox.job = job
        try:
            threading.Thread(target=self._serve, args=(mailbox,), name=name, daemon=True).start()
        except BaseException:
            with self._lock:
                self._threads -= 1
            raise

    def _serve(self, idle: _Idle) -> None:
        job, idle.job = idle.job, None
        while job is not None:
            fn, args = job
            # An idle thread must hold no reference to its last job (a prepared model must die with its clients).
            job = None
            try:
                fn(*args)
            except Exception as e:
                # Jobs report their own failures; anything escaping is reported as an uncaught thread exception.
                hook_args = (type(e), e, e.__traceback__, threading.current_thread())
                threading.excepthook(threading.ExceptHookArgs(hook_args))  # type: ignore[call-arg]
                del e, hook_args
            del fn, args
            job = self._next(idle)

    def _next(self, idle: _Idle) -> Job | None:
        """The next job for a thread that finished one: from the backlog, else handed over while idle; None to end."""
        with self._lock:
            if self._backlog:
                return self._backlog.popleft()
            self._idle.append(idle)
        if not idle.wake.acquire(timeout=self._idle_exit_s):
            with self._lock:
                if idle in self._idle:
                    self._idle.remove(idle)
                    self._threads -= 1
                    return None
            # A job was handed over just as the wait timed out.
            idle.wake.acquire()
        job, idle.job = idle.job, None
        return job


def _forget_threads_in_child() -> None:
    # A forked child has none of its parent's threads: its pools start over.
    for pool in list(_POOLS):
        pool._reset()


os.register_at_fork(after_in_child=_forget_threads_in_child)
