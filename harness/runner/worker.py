"""The worker process: creates the device once, then runs the cases its parent sends until told to stop.

Started as `python -m harness.runner.worker FD`, it talks to the parent over a multiprocessing connection on that
file descriptor; the first message is (sys.path, driver spec, faults, crash log path). Before each case it
announces the case, so that if the process dies or stops answering the parent knows which case did it.
faulthandler writes the Python stack to the crash log when the process is killed by a signal (a crash) or when the
parent sends SIGUSR1 (a hang).

Messages from the parent:
    ("case", target_ref, "bytes" | "case", payload)     run one input
    ("random", target_refs, first_seed, count, seconds)  run seeded random cases round-robin until one fails
    ("stop",)
Messages to the parent:
    ("ready",) | ("startup_failed", traceback_text)
    ("start", seed | None, target_name)                  before each case
    ("result", verdict_json, traceback_text, case_json | None, elapsed)
    ("batch", attempted, rejected, failed | None)        failed: {"seed", "target", "verdict", "traceback", "case"}
"""

from __future__ import annotations

import ctypes
import ctypes.util
import faulthandler
import os
import resource
import signal
import sys
import time
import traceback
from collections.abc import Sequence
from multiprocessing.connection import Connection

from harness.drivers import create_device
from harness.hal import Device
from harness.oracle.rules import MEMORY_BOUNDED
from harness.oracle.verdict import Outcome, Verdict
from harness.runner.execute import (
    Judged,
    as_case,
    decode_bytes,
    decode_seed,
    harness_error,
    resolve_target,
    run_case,
)
from harness.runner.pool import HANG_DUMP_SIGNAL, MEMORY_BUDGET_ENV, memory_budget_mb
from harness.targets.base import Target


def main(argv: Sequence[str]) -> None:
    """Entry point: connect to the parent, take its import path and configuration, serve."""
    die_with_parent()
    conn = Connection(int(argv[0]))
    parent_path, driver_spec, faults, crash_log, memory_limit_mb = conn.recv()
    sys.path[:] = list(dict.fromkeys([*parent_path, *sys.path]))
    limit_memory(memory_limit_mb)
    serve(conn, driver_spec, faults, crash_log)


def limit_memory(limit_mb: int | None) -> bool:
    """Cap this process's address space at `limit_mb` MiB (None or 0: no cap); True if the cap is in place.

    A driver that tries to run a huge model then meets a MemoryError (or dies) inside its worker, where the case
    is judged, instead of exhausting the machine's memory.
    """
    if not limit_mb:
        return False
    limit = int(limit_mb) << 20
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):
        return False
    return True


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB (ru_maxrss counts KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def within_memory_budget(judged: Judged, before_mb: float, target: Target) -> Judged:
    """The judged case, or a memory.bounded failure when it made the peak resident memory grow past the budget."""
    grown = peak_rss_mb() - before_mb
    budget = memory_budget_mb()
    if not budget or grown <= budget or not judged.verdict.ok:
        return judged
    verdict = Verdict(
        Outcome.FAILURE,
        rule=MEMORY_BOUNDED,
        title=f"the case made the worker's peak resident memory grow by {grown:.0f} MiB",
        details=f"more than the budget of {budget} MiB ({MEMORY_BUDGET_ENV}); a huge size must be refused, not run",
        target=target.name,
        extras={"grown_mb": round(grown)},
    )
    return Judged(verdict, judged.traceback_text)


_PR_SET_PDEATHSIG = 1


def die_with_parent() -> bool:
    """Ask the kernel to kill this process when its parent dies; True if that is arranged (Linux only)."""
    # A worker stuck in a hanging case never reads its connection again, so it could not notice a parent that was
    # killed: without this it would spin on forever.
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:  # the parent died before the request took effect
        os.kill(os.getpid(), signal.SIGKILL)
    return True


def serve(conn: Connection, driver_spec: str, faults: Sequence[str], crash_log: str) -> None:
    """The worker's main loop."""
    # Ctrl-C in a terminal reaches the whole process group; only the parent should decide what to do with it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    log = open(crash_log, "w")  # noqa: SIM115 - stays open for faulthandler until the process ends
    faulthandler.enable(file=log, all_threads=True)
    faulthandler.register(HANG_DUMP_SIGNAL, file=log, all_threads=True)
    try:
        device = create_device(driver_spec, faults=list(faults))
    except Exception:
        conn.send(("startup_failed", traceback.format_exc()))
        return
    conn.send(("ready",))
    targets: dict[str, Target] = {}
    while True:
        try:
            message = conn.recv()
        except EOFError:  # the parent went away without saying stop
            return
        kind = message[0]
        if kind == "stop":
            return
        if kind == "case":
            conn.send(_one(conn, device, _target(targets, message[1]), message[2], message[3]))
        elif kind == "random":
            _, refs, first_seed, count, seconds = message
            conn.send(_random(conn, device, [_target(targets, r) for r in refs], first_seed, count, seconds))
        else:
            raise ValueError(f"worker: unknown message {kind!r}")


def _target(cache: dict[str, Target], ref: str) -> Target:
    if ref not in cache:
        cache[ref] = resolve_target(ref)
    return cache[ref]


def _one(conn: Connection, device: Device, target: Target, kind: str, payload: object) -> tuple:
    conn.send(("start", None, target.name))
    start = time.perf_counter()
    try:
        case = decode_bytes(target, payload) if kind == "bytes" else as_case(payload)
    except Exception as exc:
        judged = harness_error(target, exc, "decode")
        return ("result", judged.verdict.to_json(), judged.traceback_text, None, time.perf_counter() - start)
    if case is None:
        verdict = Verdict(Outcome.SUCCESS, title="the input decodes to no case", target=target.name)
        verdict.extras["rejected"] = True
        return ("result", verdict.to_json(), "", None, time.perf_counter() - start)
    # The JSON as decoded: a driver that writes into the model's pools cannot change what the replay reads.
    case_json = case.to_json()
    try:
        before = peak_rss_mb()
        judged = within_memory_budget(run_case(target, case, device), before, target)
    finally:
        case.close()
    return ("result", judged.verdict.to_json(), judged.traceback_text, case_json, time.perf_counter() - start)


def _random(
    conn: Connection, device: Device, targets: list[Target], first_seed: int, count: int, seconds: float
) -> tuple:
    deadline = time.perf_counter() + seconds
    rejected = 0
    for i in range(count):
        if time.perf_counter() >= deadline:
            return ("batch", i, rejected, None)
        seed = first_seed + i
        target = targets[seed % len(targets)]
        conn.send(("start", seed, target.name))
        try:
            case = decode_seed(target, seed)
        except Exception as exc:
            case, judged = None, harness_error(target, exc, "decode")
        else:
            if case is None:
                rejected += 1
                continue
            before = peak_rss_mb()
            judged = within_memory_budget(run_case(target, case, device), before, target)
        if not judged.verdict.ok:
            failed = {
                "seed": seed,
                "target": target.name,
                "verdict": judged.verdict.to_json(),
                "traceback": judged.traceback_text,
                "case": case.to_json() if case is not None else None,
            }
            if case is not None:
                case.close()
            return ("batch", i + 1, rejected, failed)
        if case is not None:
            case.close()
    return ("batch", count, rejected, None)


if __name__ == "__main__":
    main(sys.argv[1:])
