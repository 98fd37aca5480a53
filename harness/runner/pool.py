"""Running cases in an isolated worker process: a driver that crashes or hangs costs a worker, not the harness.

A WorkerPool keeps one worker (with its device) alive between cases for speed and starts a fresh one after a
crash or a hang. Each case ends in one of four ways: SUCCESS, FAILURE (the target's verdict), HANG (no answer
within the time limit: the worker's stack is dumped, then it is killed) or CRASH (the worker died: the signal or
exit code is recorded with the stack faulthandler wrote).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe
from pathlib import Path

from harness.case import Case
from harness.drivers import DEFAULT_DRIVER
from harness.oracle.verdict import DRIVER_ANSWERS, DRIVER_SURVIVES, Outcome, Verdict
from harness.runner.execute import as_case, decode_seed, resolve_target, verdict_from_json
from harness.runner.frames import dump_frames, significant

DEFAULT_TIMEOUT_S = 30.0
STARTUP_TIMEOUT_S = 120.0
_POLL_S = 0.05
_DUMP_GRACE_S = 0.5  # time given to faulthandler to write a hung worker's stack before the kill
HANG_DUMP_SIGNAL = signal.SIGUSR1  # the worker's faulthandler dumps its stack on this signal


class WorkerStartError(RuntimeError):
    """The worker could not create the device (a bad driver spec, or a factory that fails)."""


@dataclass
class RunResult:
    """How one isolated case ended."""

    verdict: Verdict
    traceback_text: str = ""
    elapsed: float = 0.0
    case: dict | None = None  # the case JSON that ran (decoded in the worker from bytes); None if none did

    @property
    def rejected(self) -> bool:
        """True when the input decoded to no case."""
        return bool(self.verdict.extras.get("rejected"))


@dataclass
class BatchResult:
    """What a run of seeded random cases did."""

    attempted: int  # seeds tried, including rejected ones
    rejected: int
    failed: FailedCase | None = None


@dataclass
class FailedCase:
    """One seeded case that did not end in SUCCESS, with everything needed to run it again.

    Not a finding (harness.campaign.finding): nothing is deduplicated, minimized or stored here.
    """

    seed: int | None
    target: str
    verdict: Verdict
    traceback_text: str = ""
    case: dict | None = None


@dataclass
class _Ended:
    """The worker died or hung while running the announced case."""

    verdict: Verdict
    traceback_text: str
    announced: tuple = ()


@dataclass
class _Worker:
    process: subprocess.Popen
    conn: Connection
    crash_log: Path
    announced: tuple = field(default=())


def _signal_name(exit_code: int) -> str:
    try:
        return signal.Signals(-exit_code).name
    except ValueError:
        return f"signal {-exit_code}"


# The address space a worker may take, in MiB (RLIMIT_AS; 0: unlimited). A worker running ordinary cases peaks near
# 600 MiB of address space and 75 MiB resident (LiteRT loaded, measured over the execution and differential
# targets), so 4 GiB leaves ample room while a driver that allocates a huge model meets a MemoryError.
DEFAULT_MEMORY_LIMIT_MB = 4096
MEMORY_LIMIT_ENV = "NNFUZZ_WORKER_MEMORY_MB"
# How much one case may grow a worker's peak resident memory, in MiB (0: unchecked): ordinary cases grow it by a few.
DEFAULT_MEMORY_BUDGET_MB = 512
MEMORY_BUDGET_ENV = "NNFUZZ_CASE_MEMORY_BUDGET_MB"


def memory_limit_mb() -> int:
    """The workers' address-space cap in MiB: NNFUZZ_WORKER_MEMORY_MB if set, else DEFAULT_MEMORY_LIMIT_MB."""
    return int(os.environ.get(MEMORY_LIMIT_ENV, DEFAULT_MEMORY_LIMIT_MB))


def memory_budget_mb() -> int:
    """One case's allowance of peak resident memory growth in MiB: NNFUZZ_CASE_MEMORY_BUDGET_MB, else the default."""
    return int(os.environ.get(MEMORY_BUDGET_ENV, DEFAULT_MEMORY_BUDGET_MB))


class WorkerPool:
    """One reusable worker process running cases on a device made from a driver spec and faults."""

    def __init__(
        self,
        driver_spec: str = DEFAULT_DRIVER,
        faults: Sequence[str] = (),
        timeout_s: float = DEFAULT_TIMEOUT_S,
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
        import_path: Sequence[str] = (),
        memory_limit: int | None = None,
    ) -> None:
        self.driver_spec = driver_spec
        # The worker's address-space cap in MiB (None: memory_limit_mb(); 0: none).
        self.memory_limit = memory_limit_mb() if memory_limit is None else memory_limit
        # Folders the worker searches before this process's import path: a copy of a driver package placed there
        # is the one the worker's driver spec loads (the mutation self-evaluation runs mutated copies this way).
        self.import_path = tuple(import_path)
        self.faults = tuple(faults)
        self.timeout_s = timeout_s
        self.startup_timeout_s = startup_timeout_s
        self.starts = 0  # workers started so far (1 + restarts after crashes and hangs)
        self._worker: _Worker | None = None

    # -- life cycle ----------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker now (otherwise it starts with the first case); WorkerStartError if it cannot."""
        if self._worker is not None:
            return
        fd, log_path = tempfile.mkstemp(prefix="nnfuzz-worker-", suffix=".log")
        os.close(fd)
        parent, child = Pipe()
        # A fresh interpreter (not multiprocessing's spawn): it never re-imports the caller's main module, so any
        # script can use the pool. The worker gets this process's import path to find the same drivers and targets.
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "harness.runner.worker", str(child.fileno())],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        except OSError:
            parent.close()
            Path(log_path).unlink(missing_ok=True)
            raise
        finally:
            child.close()
        self._worker = _Worker(process, parent, Path(log_path))
        self.starts += 1
        try:
            parent.send(([*self.import_path, *sys.path], self.driver_spec, self.faults, log_path, self.memory_limit))
        except OSError:
            pass  # the worker is already gone: the wait below says so
        deadline = time.monotonic() + self.startup_timeout_s
        while not parent.poll(_POLL_S):
            if process.poll() is not None or time.monotonic() > deadline:
                text = self._discard()
                raise WorkerStartError(f"the worker for {self.driver_spec} did not start\n{text}")
        try:
            message = parent.recv()
        except EOFError:
            message = ("startup_failed", "")
        if message[0] != "ready":
            text = message[1] if len(message) > 1 else ""
            self._discard()
            raise WorkerStartError(
                f"cannot create a device from {self.driver_spec} (faults {list(self.faults)}):\n{text}"
            )

    def close(self) -> None:
        """Stop the worker."""
        if self._worker is None:
            return
        try:
            self._worker.conn.send(("stop",))
            self._worker.process.wait(2.0)
        except (OSError, EOFError, subprocess.TimeoutExpired):
            pass
        self._discard()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The current worker's process id (None when none runs)."""
        return self._worker.process.pid if self._worker else None

    def _discard(self) -> str:
        """Kill and forget the worker; returns what its crash log holds."""
        w, self._worker = self._worker, None
        if w is None:
            return ""
        if w.process.poll() is None:
            w.process.kill()
        w.process.wait()
        w.conn.close()
        try:
            text = w.crash_log.read_text(errors="replace")
            w.crash_log.unlink()
        except OSError:
            text = ""
        return text

    # -- running cases -------------------------------------------------------------------------------------------

    def run(self, target: str, payload: bytes | Case | Mapping) -> RunResult:
        """Run one input (raw fuzzer bytes, a Case or a case JSON) of a target, isolated."""
        name = resolve_target(target).name  # an unknown target is the caller's mistake: fail here, not in the worker
        self.start()
        if isinstance(payload, bytes | bytearray):
            message = ("case", target, "bytes", bytes(payload))
        else:
            message = ("case", target, "case", as_case(payload).to_json())
        start = time.perf_counter()
        answer = self._exchange(message, name)
        elapsed = time.perf_counter() - start
        if isinstance(answer, _Ended):
            case = None if isinstance(payload, bytes | bytearray) else as_case(payload).to_json()
            return RunResult(answer.verdict, answer.traceback_text, elapsed, case)
        _, verdict_json, traceback_text, case_json, _ = answer
        return RunResult(verdict_from_json(verdict_json), traceback_text, elapsed, case_json)

    def run_random(self, targets: Sequence[str], first_seed: int, count: int, seconds: float) -> BatchResult:
        """Seeded random cases (seed s runs targets[s % len(targets)]) until one fails, `count` seeds or `seconds`."""
        resolved = [resolve_target(ref) for ref in targets]
        self.start()
        answer = self._exchange(
            ("random", list(targets), first_seed, count, seconds), ",".join(t.name for t in resolved)
        )
        if isinstance(answer, _Ended):
            seed = answer.announced[1] if answer.announced else first_seed
            target = resolved[seed % len(resolved)]
            try:
                case = decode_seed(target, seed)  # generation is harness code: safe to redo here
            except Exception:  # a generator bug must not hide the crash; the case is then unknown
                case = None
            case_json = case.to_json() if case else None
            if case is not None:
                case.close()
            failed = FailedCase(seed, target.name, answer.verdict, answer.traceback_text, case_json)
            return BatchResult(seed - first_seed + 1, 0, failed)
        _, attempted, rejected, found = answer
        if found is None:
            return BatchResult(attempted, rejected)
        verdict = verdict_from_json(found["verdict"])
        failed = FailedCase(found["seed"], found["target"], verdict, found["traceback"], found["case"])
        return BatchResult(attempted, rejected, failed)

    def _exchange(self, message: tuple, what: str) -> tuple | _Ended:
        """Send a request and wait for its answer, watching the worker; _Ended if it dies or hangs."""
        w = self._worker
        assert w is not None
        try:
            w.conn.send(message)
        except (OSError, EOFError):
            return self._died(what)
        last_beat = time.monotonic()
        while True:
            if w.conn.poll(_POLL_S):
                try:
                    answer = w.conn.recv()
                except (EOFError, OSError):
                    return self._died(what)
                if answer[0] == "start":
                    w.announced, last_beat = answer, time.monotonic()
                    continue
                return answer
            if w.process.poll() is not None:
                if w.conn.poll(0):
                    continue  # an answer sent just before exiting is still an answer
                return self._died(what)
            if time.monotonic() - last_beat > self.timeout_s:
                return self._hung(what)

    def _died(self, what: str) -> _Ended:
        w = self._worker
        assert w is not None
        try:
            code = w.process.wait(5.0)
        except subprocess.TimeoutExpired:  # the connection broke but the process lingers: it is no use any more
            w.process.kill()
            code = w.process.wait()
        announced = w.announced
        text = self._discard()
        how = _signal_name(code) if code is not None and code < 0 else f"exit code {code}"
        verdict = Verdict(
            Outcome.CRASH,
            rule=DRIVER_SURVIVES,
            title=f"the worker process died ({how})",
            details=f"while running a case of {announced[2] if announced else what}",
            target=announced[2] if announced else what,
            frames=tuple(significant(dump_frames(text))),
            extras={"signal": how} if code is not None and code < 0 else {"exit_code": code},
        )
        return _Ended(verdict, text, announced)

    def _hung(self, what: str) -> _Ended:
        w = self._worker
        assert w is not None
        announced = w.announced
        try:
            os.kill(w.process.pid, HANG_DUMP_SIGNAL)
        except ProcessLookupError:
            pass
        time.sleep(_DUMP_GRACE_S)
        text = self._discard()
        verdict = Verdict(
            Outcome.HANG,
            rule=DRIVER_ANSWERS,
            title=f"no answer within {self.timeout_s:g} s",
            details=f"while running a case of {announced[2] if announced else what}; the worker was killed",
            target=announced[2] if announced else what,
            frames=tuple(significant(dump_frames(text))),
            extras={"timeout_s": self.timeout_s},
        )
        return _Ended(verdict, text, announced)


def run_isolated(
    target: str,
    payload: bytes | Case | Mapping,
    driver_spec: str = DEFAULT_DRIVER,
    faults: Sequence[str] = (),
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> RunResult:
    """Run one input in a fresh worker process and classify how it ended."""
    with WorkerPool(driver_spec, faults, timeout_s) as pool:
        return pool.run(target, payload)
