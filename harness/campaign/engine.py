"""The campaign engine: recheck known findings, fuzz every target for its share of the budget, triage, measure
coverage, report. It emits events; it prints nothing.

Corpora: each target's seeds (`corpus/<target>`, committed) are read and never written. What libFuzzer finds goes
to the target's working corpus (CampaignConfig.working_corpus: by default runs/corpus/<target>, shared by every
campaign of that runs/ folder), which the next campaign starts from: its entries at the start of a campaign are
"carried" (time 0 of the coverage timeline, with the seeds), those that appear during it are "found".
`nnfuzz corpus` shows, minimizes and promotes working corpora (harness.campaign.corpora).

Phases, each recorded in state.json when done so that a resumed run skips it:
    recheck    the findings database's findings replayed on the current driver (progression check)
    fuzz       libFuzzer workers (plain mode, restarted after each crash; fork mode for a target that keeps
               crashing), the budget shared by harness.campaign.schedule; artifacts triaged as they appear
    triage     the artifacts left over once fuzzing stops
    coverage   seeds, carried and found entries replayed under coverage.py in the order they were found, with
               the line-by-line HTML of the driver in coverage/html/
    report     report.json and report.html

Stopping: `request_stop()` (or Ctrl-C, or SIGTERM through the caller) ends the fuzz phase early; the rest still runs,
so the report says what was found. A run folder whose campaign was killed (even with SIGKILL) is resumed by running
the engine on it again: fuzzing continues for the budget not yet spent.
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.campaign import report as reporting
from harness.campaign.config import CampaignConfig
from harness.campaign.corpus import drop_partial, entries
from harness.campaign.coverage_replay import measure_coverage
from harness.campaign.events import (
    CampaignDone,
    CampaignStarted,
    CorpusLoaded,
    CoverageMeasured,
    CoverageProgress,
    Event,
    PhaseStarted,
    ReportWritten,
    TargetStatus,
    Tick,
    WorkerEnded,
)
from harness.campaign.findings_db import FindingsDB, RunRecord, now
from harness.campaign.folder import RunFolder, atomic_write_json
from harness.campaign.schedule import next_assignment
from harness.campaign.triage import Triage
from harness.campaign.workers import FuzzWorker
from harness.runner.libfuzzer import FuzzConfig

POLL_S = 0.25
TICK_S = 1.0
CHECKPOINT_S = 2.0
TRIAGE_MIN_AGE_S = 1.0  # an artifact younger than this may still be being written
COVERAGE_POINTS = 20
# A target whose workers fail this many times in a row without fuzzing (a script that cannot start) is dropped.
MAX_FAILED_STARTS = 3
# With this many artifacts of one target waiting, only one in BACKLOG_SAMPLE is replayed.
BACKLOG_LIMIT, BACKLOG_SAMPLE = 20, 10
FAILED_START_S = 15.0


class CampaignError(RuntimeError):
    """The campaign cannot run as configured (harness misuse: say what to change)."""


@dataclass
class _TargetState:
    spent_s: float = 0.0  # worker-seconds of finished workers
    execs: int = 0  # executions of finished workers
    restarts: int = 0  # workers started again after a crash
    crashes: int = 0  # workers that ended on a finding
    workers: int = 0  # workers started in all
    failed_starts: int = 0  # consecutive workers that ended at once with an error
    disabled: str = ""  # why the target is no longer fuzzed
    coverage: int | None = None
    features: int | None = None
    seeds: list[str] = field(default_factory=list)
    carried: int = 0  # working-corpus entries there when the campaign started

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class _Running:
    worker: FuzzWorker
    slice_s: float


class Campaign:
    """One campaign on one run folder (new or resumed)."""

    def __init__(self, config: CampaignConfig, emit: Callable[[Event], None] = lambda e: None) -> None:
        self.config = config
        self.run = RunFolder(config.out_dir)
        self._emit_lock = threading.Lock()
        self._emit = emit
        self._stop = threading.Event()
        self._cancel = threading.Event()  # stop everything, even triage and wrap-up
        self.interrupted = False
        self.state: dict = {}
        self.targets: dict[str, _TargetState] = {}
        self.db = FindingsDB(config.db_path)
        self.triage: Triage | None = None
        self._queue: queue.Queue = queue.Queue()
        self._submitted: set[str] = set()
        self._backlog_lock = threading.Lock()
        self._backlog: Counter[str] = Counter()  # artifacts queued, per target
        self._taken: Counter[str] = Counter()  # artifacts taken from the queue, per target
        self._triage_thread: threading.Thread | None = None
        self._triage_errors: list[str] = []
        self._corpus_known: dict[str, set[str]] = {}  # every working-corpus entry seen (journalled with its time)
        self._carried: dict[str, set[str]] = {}  # the working-corpus entries there when the campaign started
        self._corpus_now: dict[str, int] = {}  # entries found there now (libFuzzer replaces some by smaller ones)
        self._last_sample: dict | None = None
        self._running: list[_Running] = []  # the libFuzzer workers running now

    # -- events and stopping ---------------------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """Hand an event to the caller (from any thread, one at a time)."""
        with self._emit_lock:
            self._emit(event)

    def request_stop(self) -> None:
        """End fuzzing early; triage, coverage and the report still run."""
        self.interrupted = True
        self._stop.set()

    def cancel(self) -> None:
        """Stop as soon as possible, skipping what is left (the run folder can be resumed)."""
        self.request_stop()
        self._cancel.set()

    # -- state -----------------------------------------------------------------------------------------------------

    def _load(self) -> bool:
        """Create or reopen the run folder; True when resuming."""
        run = self.run
        resumed = run.exists()
        if resumed:
            saved = CampaignConfig.from_json(run.read_json(run.settings))
            if [t.name for t in saved.targets] != [t.name for t in self.config.targets]:
                raise CampaignError(f"{run.root} holds a campaign of other targets; resume it with its own settings")
            self.state = run.read_json(run.state, {}) or {}
        else:
            run.root.mkdir(parents=True, exist_ok=True)
            atomic_write_json(run.settings, self.config.to_json())
            self.state = {"run": run.name, "created": now(), "active_s": 0.0, "sessions": [], "phases": {}}
        saved_targets = self.state.get("targets", {})
        known = set(_TargetState.__dataclass_fields__)
        journalled = {(r["target"], r["name"]) for r in run.corpus_times}
        for spec in self.config.targets:
            ts = _TargetState(**{k: v for k, v in saved_targets.get(spec.name, {}).items() if k in known})
            if not resumed or not ts.seeds:
                ts.seeds = entries(self.config.seed_corpus(spec.name))
            working = self.config.working_corpus(spec.name)
            if not resumed:
                # What earlier campaigns left in the working corpus is where this one starts: time 0, as the seeds.
                drop_partial(working)
                carried = [n for n in entries(working) if (spec.name, n) not in journalled]
                run.corpus_times.extend([{"target": spec.name, "name": n, "t": 0.0, "carried": True} for n in carried])
                ts.carried = len(carried)
            self._carried[spec.name] = {
                r["name"] for r in run.corpus_times if r["target"] == spec.name and r.get("carried")
            }
            self.targets[spec.name] = ts
        self.state.setdefault("phases", {})
        self.state["sessions"].append({"started": now(), "active_s": 0.0})
        self.state.setdefault("interrupted", False)
        self.state["interrupted"] = False
        return resumed

    def _checkpoint(self, active_s: float | None = None) -> None:
        if active_s is not None:
            session = self.state["sessions"][-1]
            session["active_s"] = round(session.get("active_s", 0.0) + active_s - self.state["active_s"], 3)
            self.state["active_s"] = round(active_s, 3)
        targets = {name: ts.to_json() for name, ts in self.targets.items()}
        for r in self._running:
            # A kill loses the workers, not the time they used: a resumed run counts it as spent.
            targets[r.worker.target]["spent_s"] += r.worker.elapsed
        self.state["targets"] = targets
        self.state["interrupted"] = self.interrupted
        atomic_write_json(self.run.state, self.state)

    def _phase_done(self, phase: str, value: object = True) -> None:
        self.state["phases"][phase] = value
        self._checkpoint()

    # -- the whole campaign ----------------------------------------------------------------------------------------

    def run_campaign(self) -> dict:
        """Run (or resume) the campaign; the report as a dict."""
        config = self.config
        # The driver must start (a wrong spec or fault name is misuse) before anything is written.
        self.triage = Triage(config, self.run, self.db, self.emit, should_stop=self._cancel.is_set)
        try:
            self.triage.pool.start()
        except Exception as exc:
            self.triage.close()
            raise CampaignError(f"the driver cannot start: {exc}") from exc
        resumed = self._load()
        self.db.save_run(self._run_record())
        remaining = max(config.budget_s - self.state["active_s"], 0.0)
        self.emit(
            CampaignStarted(
                str(self.run.root),
                resumed,
                config.budget_s,
                remaining,
                [t.name for t in config.targets],
                config.jobs,
                config.driver,
                list(config.faults),
            )
        )
        self._checkpoint()
        for spec in config.targets:
            ts = self.targets[spec.name]
            self.emit(
                CorpusLoaded(
                    spec.name,
                    len(ts.seeds),
                    ts.carried,
                    str(config.seed_corpus(spec.name)),
                    str(config.working_corpus(spec.name)),
                )
            )
        try:
            if not self.state["phases"].get("recheck"):
                self.emit(PhaseStarted("recheck", "replaying the database's findings on the current driver"))
                self.triage.recheck_known(t.name for t in config.targets)
                self._phase_done("recheck")
            self._start_triage_thread()
            if not self.state["phases"].get("fuzz"):
                self._fuzz()
                if not self.interrupted:
                    self._phase_done("fuzz")
            self._finish_triage()
            if self._cancel.is_set():
                return {}
            self._coverage()
            return self._report()
        finally:
            self._cancel.set()
            if self._triage_thread is not None and self._triage_thread.is_alive():
                self._queue.put(None)
                self._triage_thread.join(10.0)
            if self.triage is not None:
                self.triage.close()
            self._checkpoint()

    def _run_record(self) -> RunRecord:
        config = self.config
        created = self.state.get("created", now())
        ended = now() if self.state["phases"].get("report") else None
        return RunRecord(
            self.run.name,
            str(self.run.root),
            created,
            config.driver,
            ended,
            list(config.faults),
            [t.name for t in config.targets],
            config.budget_s,
        )

    # -- triage thread ---------------------------------------------------------------------------------------------

    def _start_triage_thread(self) -> None:
        assert self.triage is not None
        self._triage_thread = threading.Thread(target=self._triage_loop, name="triage", daemon=True)
        self._triage_thread.start()
        self._submit_artifacts(min_age_s=0.0)  # those a killed session left

    def _triage_loop(self) -> None:
        assert self.triage is not None
        while True:
            item = self._queue.get()
            if item is None or self._cancel.is_set():
                return
            spec, path = item
            with self._backlog_lock:
                self._backlog[spec.name] -= 1
                waiting = self._backlog[spec.name]
                self._taken[spec.name] += 1
                taken = self._taken[spec.name]
            try:
                # A bug hit every second writes an artifact every second: when they pile up, replay a sample
                # (the artifacts stay on disk, listed in the report as not replayed).
                if waiting >= BACKLOG_LIMIT and taken % BACKLOG_SAMPLE:
                    self.triage.skip(spec, path, f"{waiting} artifacts of {spec.name} were waiting")
                else:
                    self.triage.triage(spec, path)
            except Exception:  # one artifact must not stop the triage of the others
                self._triage_errors.append(traceback.format_exc())

    def _submit_artifacts(self, min_age_s: float = TRIAGE_MIN_AGE_S) -> None:
        assert self.triage is not None
        for spec, path in self.triage.pending(min_age_s):
            key = self.triage.key(spec, path)
            if key not in self._submitted:
                self._submitted.add(key)
                with self._backlog_lock:
                    self._backlog[spec.name] += 1
                self._queue.put((spec, path))

    def _finish_triage(self) -> None:
        if self._triage_thread is None:
            return
        self.emit(PhaseStarted("triage", f"{self._queue.qsize()} artifact(s) left to triage"))
        self._submit_artifacts(min_age_s=0.0)
        self._queue.put(None)
        while self._triage_thread.is_alive():
            self._triage_thread.join(0.5)
        self._triage_thread = None

    # -- fuzzing ---------------------------------------------------------------------------------------------------

    def _fuzz(self) -> None:
        config = self.config
        for spec in config.targets:
            dropped = drop_partial(config.working_corpus(spec.name))
            known = {r["name"] for r in self.run.corpus_times if r["target"] == spec.name}
            self._corpus_known[spec.name] = known - set(dropped)
        self.emit(PhaseStarted("fuzz", f"{len(config.targets)} target(s), {config.jobs} job(s)"))
        base = self.state["active_s"]
        started = time.monotonic()
        running = self._running
        last_tick = last_checkpoint = last_sample = 0.0
        self._sample(base, running)
        try:
            while True:
                elapsed = base + time.monotonic() - started
                for r in running:
                    if r.worker.elapsed >= r.slice_s and r.worker.poll() is None and not r.worker.stopping:
                        # The slice includes the start-up libFuzzer's -max_total_time does not count.
                        r.worker.interrupt()
                for r in [r for r in running if r.worker.poll() is not None or r.worker.overdue()]:
                    running.remove(r)
                    self._ended(r)
                if self._stop.is_set() or elapsed >= config.budget_s:
                    break
                while len(running) < config.jobs:
                    worker = self._next_worker(elapsed, running)
                    if worker is None:
                        break
                    running.append(worker)
                if not running:
                    break  # every target is done or disabled
                now_s = time.monotonic()
                if now_s - last_tick >= TICK_S:
                    last_tick = now_s
                    self.emit(Tick(elapsed, config.budget_s, self._status(running)))
                if now_s - last_sample >= config.sample_s:
                    last_sample = now_s
                    self._sample(elapsed, running)
                    self._submit_artifacts()
                if now_s - last_checkpoint >= CHECKPOINT_S:
                    last_checkpoint = now_s
                    self._checkpoint(elapsed)
                time.sleep(POLL_S)
        except KeyboardInterrupt:
            self.request_stop()
        finally:
            while running:
                r = running.pop()
                r.worker.stop()
                self._ended(r)
            elapsed = min(base + time.monotonic() - started, max(config.budget_s, base))
            self._sample(elapsed, [])
            self._checkpoint(elapsed)
            self._submit_artifacts(min_age_s=0.0)

    def _next_worker(self, elapsed: float, running: list[_Running]) -> _Running | None:
        config = self.config
        active = [t.name for t in config.targets if not self.targets[t.name].disabled]
        spent = {name: self.targets[name].spent_s for name in active}
        held: dict[str, float] = {}
        for r in running:
            # What a running worker will have used in all: its slice, or more if it overran it.
            held[r.worker.target] = held.get(r.worker.target, 0.0) + max(r.slice_s, r.worker.elapsed)
        assignment = next_assignment(active, config.budget_s, config.jobs, elapsed, spent, held)
        if assignment is None:
            return None
        spec = next(t for t in config.targets if t.name == assignment.target)
        ts = self.targets[spec.name]
        seeds = config.seed_corpus(spec.name)
        fuzz_config = FuzzConfig(
            target=spec.name,
            out_dir=self.run.target_dir(spec.name),
            budget_s=max(int(assignment.seconds), 1),
            seed_corpus=[seeds] if seeds.is_dir() else [],
            driver=config.driver,
            faults=list(config.faults),
            timeout_s=config.timeout_s,
            extra_args=list(config.extra_args),
            script=spec.script,
            corpus=config.working_corpus(spec.name),
        )
        ts.workers += 1
        log = self.run.logs(spec.name) / f"worker-{ts.workers:04d}.log"
        worker = FuzzWorker(fuzz_config, log, fork=ts.crashes >= config.fork_after_crashes)
        worker.start()
        return _Running(worker, assignment.seconds)

    def _ended(self, r: _Running) -> None:
        worker = r.worker
        code = worker.poll()
        if code is None:
            worker.kill()  # overdue
            code = worker.poll()
        worker.finish()
        stats = worker.snapshot()
        ts = self.targets[worker.target]
        ts.spent_s += worker.elapsed
        ts.execs += stats.execs
        ts.coverage = max(ts.coverage or 0, stats.coverage or 0) or ts.coverage
        ts.features = max(ts.features or 0, stats.features or 0) or ts.features
        if worker.stopping:
            reason = "stopped"
        elif worker.interrupted or code == 0:
            reason = "time"  # a worker in fork mode may have found things on its way: it still ran its time
        elif stats.findings > 0:
            reason = "crash"
        else:
            reason = "error"
        if reason == "crash":
            ts.crashes += 1
            ts.restarts += 1
        if reason == "error" and stats.execs == 0 and worker.elapsed < FAILED_START_S:
            ts.failed_starts += 1
            if ts.failed_starts >= MAX_FAILED_STARTS:
                ts.disabled = f"its fuzz script failed to start {MAX_FAILED_STARTS} times (see {worker.log_path})"
        else:
            ts.failed_starts = 0
        self.emit(WorkerEnded(worker.target, reason, code, round(worker.elapsed, 2), str(worker.log_path)))

    def _status(self, running: list[_Running]) -> dict[str, TargetStatus]:
        statuses = {}
        findings = self._findings_by_target()
        for spec in self.config.targets:
            ts = self.targets[spec.name]
            mine = [r.worker.snapshot() for r in running if r.worker.target == spec.name]
            coverage = max([s.coverage or 0 for s in mine] + [ts.coverage or 0]) or None
            features = max([s.features or 0 for s in mine] + [ts.features or 0]) or None
            statuses[spec.name] = TargetStatus(
                execs=ts.execs + sum(s.execs for s in mine),
                execs_per_second=sum(s.execs_per_second for s in mine),
                corpus=self._corpus_now.get(spec.name, 0),
                coverage=coverage,
                features=features,
                findings=findings.get(spec.name, 0),
                workers=len(mine),
                restarts=ts.restarts,
            )
        return statuses

    def _findings_by_target(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        if self.triage is not None:
            for finding in list(self.triage.stored.values()):
                counts[finding.target] = counts.get(finding.target, 0) + 1
        return counts

    def _sample(self, elapsed: float, running: list[_Running]) -> None:
        """Note new corpus entries and append a timeline sample."""
        new_entries = []
        for spec in self.config.targets:
            known = self._corpus_known.setdefault(spec.name, set())
            present = entries(self.config.working_corpus(spec.name))
            carried = self._carried.get(spec.name, set())
            self._corpus_now[spec.name] = sum(1 for name in present if name not in carried)
            for name in present:
                if name not in known:
                    known.add(name)
                    new_entries.append({"target": spec.name, "name": name, "t": round(elapsed, 3)})
        self.run.corpus_times.extend(new_entries)
        statuses = self._status(running)
        sample = {"t": round(elapsed, 3), "targets": {}}
        previous = self._last_sample
        for name, s in statuses.items():
            rate = None
            if previous is not None and elapsed > previous["t"]:
                before = previous["targets"].get(name, {}).get("execs", 0)
                rate = round(max(s.execs - before, 0) / (elapsed - previous["t"]), 1)
            sample["targets"][name] = {
                "execs": s.execs,
                "execs_per_second": rate,
                "corpus": len(self.targets[name].seeds) + self.targets[name].carried + s.corpus,
                "found": s.corpus,
                "coverage": s.coverage,
                "features": s.features,
                "findings": s.findings,
                "workers": s.workers,
            }
        if previous is None or elapsed - previous["t"] >= 0.5:
            self.run.timeline.append(sample)
            self._last_sample = sample

    # -- wrap-up ---------------------------------------------------------------------------------------------------

    def _coverage(self) -> None:
        config = self.config
        if not config.coverage or self.state["phases"].get("coverage") or self._cancel.is_set():
            return
        inputs = self._coverage_inputs()
        self.emit(PhaseStarted("coverage", f"replaying {len(inputs)} corpus entries under coverage.py"))
        active = self.state["active_s"]
        checkpoints = [round(active * i / COVERAGE_POINTS, 3) for i in range(COVERAGE_POINTS + 1)]
        result = measure_coverage(
            inputs,
            checkpoints,
            config.driver,
            config.faults,
            self.run.coverage,
            limit_s=max(600.0, config.budget_s),
            html=True,
            progress=lambda done, total: self.emit(CoverageProgress(done, total)),
        )
        final, start = result.final, result.start
        self.emit(
            CoverageMeasured(
                final.branches_covered if final else 0,
                result.branches_total,
                result.ok,
                result.detail,
                start.branches_covered if start else 0,
                result.html or "",
            )
        )
        atomic_write_json(self.run.coverage / "summary.json", result.to_json())
        if result.ok:
            self._phase_done("coverage")

    def _coverage_inputs(self) -> list[tuple[float, str, Path]]:
        """(campaign time, target ref, file) of every seed, then every working-corpus entry: carried ones at time 0
        in the order they were written (so a campaign replays what the last one found in the order it found it),
        found ones at the time they appeared."""
        times = {(r["target"], r["name"]): r["t"] for r in self.run.corpus_times}
        end = self.state["active_s"]
        inputs: list[tuple[float, str, Path]] = []
        for spec in self.config.targets:
            seen: set[str] = set()
            seeds = self.config.seed_corpus(spec.name)
            for name in self.targets[spec.name].seeds:
                if (seeds / name).is_file():
                    inputs.append((0.0, spec.ref, seeds / name))
                    seen.add(name)
            working = self.config.working_corpus(spec.name)
            found = []
            for name in entries(working):
                if name not in seen:
                    path = working / name
                    try:
                        written = path.stat().st_mtime
                    except FileNotFoundError:
                        continue
                    found.append((times.get((spec.name, name), end), written, path))
            inputs.extend((t, spec.ref, path) for t, _, path in sorted(found))
        return inputs

    def _report(self) -> dict:
        self.emit(PhaseStarted("report"))
        self.state["phases"]["report"] = True
        self._checkpoint()
        self.db.save_run(self._run_record())
        report = reporting.build_report(self.run, self.db, self._triage_errors)
        reporting.write_report(self.run, report)
        self.emit(ReportWritten(str(self.run.report_json), str(self.run.report_html)))
        counts = report["totals"]["findings"]
        self.emit(
            CampaignDone(
                str(self.run.root),
                self.interrupted,
                counts["new"],
                counts["reproducing"],
                counts["fixed"],
                str(self.run.report_html),
            )
        )
        return report


def run_campaign(config: CampaignConfig, emit: Callable[[Event], None] = lambda e: None) -> dict:
    """Run or resume a campaign; its report."""
    return Campaign(config, emit).run_campaign()


def new_run_dir(root: Path = Path("runs")) -> Path:
    """runs/<timestamp>/, with a suffix when that exists already."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = root / stamp
    n = 2
    while path.exists():
        path, n = root / f"{stamp}-{n}", n + 1
    return path
