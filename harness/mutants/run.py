"""Running the harness against mutants of the driver: is each mutant killed, and how fast.

Each mutant is written into a copy of the driver package in a temporary folder, and a worker process whose import
path starts with that folder creates the device from the usual driver spec: the mutated copy is what it loads, and
the harness drives it through the HAL as it drives any driver. Seeded random cases of the targets run round-robin
(as `nnfuzz evaluate` runs them against a planted fault) until one fails or the budget is spent. A failing case
kills the mutant only if the same case passes on the unmutated driver; otherwise it is a false alarm and the hunt
goes on. A mutant whose driver cannot even be created (an import or construction error) is killed trivially, and
counted apart. Mutants run in parallel jobs, each with its own worker for the unmutated driver.
"""

from __future__ import annotations

import queue
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.drivers import DEFAULT_DRIVER
from harness.mutants.sample import Mutant
from harness.runner import WorkerPool, WorkerStartError, resolve_target
from harness.runner.hunt import BATCH_S, Hunt, passes_on

DEFAULT_BUDGET_S = 60.0
DEFAULT_TIMEOUT_S = 20.0  # as nnfuzz evaluate: longer than the targets' own wait for a callback
# A mutant that makes the driver's start-up loop forever is killed at start-up after this long.
STARTUP_TIMEOUT_S = 60.0

KILLED, KILLED_AT_START, SURVIVED, ERROR = "killed", "killed_at_start", "survived", "error"


@dataclass
class Config:
    """What to run the mutants with."""

    root: Path  # the unmutated package folder the mutants are made from
    targets: Sequence[str]
    driver: str = DEFAULT_DRIVER
    budget_s: float = DEFAULT_BUDGET_S
    timeout_s: float = DEFAULT_TIMEOUT_S
    jobs: int = 1
    startup_timeout_s: float = STARTUP_TIMEOUT_S
    batch_s: float = BATCH_S


@dataclass
class MutantResult:
    """What became of one mutant."""

    mutant: Mutant
    status: str  # KILLED, KILLED_AT_START, SURVIVED or ERROR
    seconds: float | None = None  # time to kill: seconds of running cases, worker start-ups excluded
    target: str | None = None
    rule: str | None = None
    title: str | None = None
    cases: int = 0
    false_alarms: int = 0  # failing cases the unmutated driver fails as well
    wall_s: float = 0.0
    detail: str = ""  # the start-up error's last line, or the harness error
    diff: str = ""

    @property
    def killed(self) -> bool:
        """Killed, trivially or not."""
        return self.status in (KILLED, KILLED_AT_START)

    def to_json(self) -> dict:
        """The report's entry."""
        m, e = self.mutant, self.mutant.edit
        return {
            "id": m.id,
            "key": m.key,
            "file": f"{m.package}/{m.path}",
            "line": e.line,
            "col": e.col,
            "operator": e.operator,
            "before": e.before,
            "after": e.after,
            "status": self.status,
            "killed": self.killed,
            "seconds": None if self.seconds is None else round(self.seconds, 3),
            "target": self.target,
            "rule": self.rule,
            "title": self.title,
            "cases": self.cases,
            "false_alarms": self.false_alarms,
            "wall_s": round(self.wall_s, 3),
            "detail": self.detail,
            "diff": self.diff,
        }


def summary(results: Sequence[MutantResult], wall_s: float) -> dict:
    """The figures of a run: counts, mutation score (errors left out), median time to kill, wall time."""
    count = {s: sum(r.status == s for r in results) for s in (KILLED, KILLED_AT_START, SURVIVED, ERROR)}
    judged = len(results) - count[ERROR]
    times = sorted(r.seconds for r in results if r.status == KILLED and r.seconds is not None)
    median = None
    if times:
        mid = len(times) // 2
        median = times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2
    nontrivial = judged - count[KILLED_AT_START]
    return {
        "mutants": len(results),
        "killed": count[KILLED],
        "killed_at_start": count[KILLED_AT_START],
        "survived": count[SURVIVED],
        "errors": count[ERROR],
        "score": round((count[KILLED] + count[KILLED_AT_START]) / judged, 4) if judged else None,
        "score_past_start": round(count[KILLED] / nontrivial, 4) if nontrivial else None,
        "median_seconds_to_kill": None if median is None else round(median, 3),
        "wall_s": round(wall_s, 1),
    }


# -- events -------------------------------------------------------------------------------------------------------


@dataclass
class MutantStarted:
    """A mutant's run begins."""

    mutant: Mutant


@dataclass
class MutantProgress:
    """A mutant's run so far."""

    mutant: Mutant
    seconds: float
    cases: int


@dataclass
class MutantDone:
    """A mutant's run ended."""

    result: MutantResult
    done: int  # mutants finished so far, this one included
    total: int


Event = MutantStarted | MutantProgress | MutantDone


# -- one mutant ---------------------------------------------------------------------------------------------------


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def run_mutant(mutant: Mutant, config: Config, clean: WorkerPool, emit: Callable[[Event], None]) -> MutantResult:
    """Hunt one mutant on a mutated copy of the package; `clean` runs the unmutated driver."""
    refs = {resolve_target(ref).name: ref for ref in config.targets}
    began = time.perf_counter()
    result = MutantResult(mutant, SURVIVED, diff=mutant.diff(config.root))
    with tempfile.TemporaryDirectory(prefix="nnfuzz-mutant-") as folder:
        mutant.write_copy(config.root, Path(folder))
        pool = WorkerPool(config.driver, [], config.timeout_s, config.startup_timeout_s, import_path=[folder])
        with pool:
            try:
                pool.start()
            except WorkerStartError as exc:
                result.status, result.detail = KILLED_AT_START, _last_line(str(exc))
                result.wall_s = time.perf_counter() - began
                return result

            def progress(hunt: Hunt) -> None:
                emit(MutantProgress(mutant, hunt.spent, hunt.cases))

            hunt = Hunt(pool, config.targets, config.budget_s, config.batch_s, progress)
            while (failed := hunt.next_failure()) is not None:
                # The mutation is what made the case fail only if the unmutated driver passes it.
                if passes_on(clean, refs[failed.target], failed):
                    result.status, result.seconds = KILLED, hunt.spent
                    v = failed.verdict
                    result.target, result.rule, result.title = failed.target, v.rule, v.title
                    break
                result.false_alarms += 1
            result.cases = hunt.cases
    result.wall_s = time.perf_counter() - began
    return result


# -- all of them --------------------------------------------------------------------------------------------------


def run_mutants(
    mutants: Sequence[Mutant], config: Config, emit: Callable[[Event], None] = lambda e: None
) -> list[MutantResult]:
    """Run every mutant, `config.jobs` at a time; the results in the order of `mutants`."""
    todo: queue.Queue[tuple[int, Mutant]] = queue.Queue()
    for item in enumerate(mutants):
        todo.put(item)
    results: list[MutantResult | None] = [None] * len(mutants)
    lock = threading.Lock()
    failures: list[BaseException] = []
    stop = threading.Event()

    def locked_emit(event: Event) -> None:
        with lock:
            emit(event)

    def job() -> None:
        # Each job has its own worker for the unmutated driver: the workers of different jobs run in parallel.
        try:
            with WorkerPool(config.driver, [], config.timeout_s, config.startup_timeout_s) as clean:
                clean.start()  # a driver that cannot start unmutated ends the run here, not as one mutant's error
                while not stop.is_set():
                    try:
                        index, mutant = todo.get_nowait()
                    except queue.Empty:
                        return
                    locked_emit(MutantStarted(mutant))
                    try:
                        result = run_mutant(mutant, config, clean, locked_emit)
                    except Exception as exc:  # a harness error spoils one mutant's result, not the run
                        result = MutantResult(mutant, ERROR, detail=f"{type(exc).__name__}: {exc}")
                    with lock:
                        results[index] = result
                        done = sum(r is not None for r in results)
                        emit(MutantDone(result, done, len(mutants)))
        except BaseException as exc:  # e.g. the unmutated driver cannot start: the run cannot go on
            failures.append(exc)
            stop.set()

    threads = [threading.Thread(target=job, name=f"mutants-{i}") for i in range(max(1, min(config.jobs, len(mutants))))]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except KeyboardInterrupt:
        stop.set()  # the jobs finish the mutants they are running, then stop
        for t in threads:
            t.join()
        raise
    if failures:
        raise failures[0]
    return [r for r in results if r is not None]
