"""Triage: every libFuzzer artifact replayed alone, named by its verdict's signature, deduplicated, minimized, stored.

An artifact whose signature this run already stored is a duplicate (counted). A signature new to this run becomes
a Finding (harness.campaign.finding), stored once as a finding folder (input.bin, case.json, traceback.txt,
finding.json with the repro commands), written atomically, then recorded in the findings database: minimized afresh
when the database has never seen it, taken from the database when an earlier campaign found it. Each artifact is
journalled when it is done, so a campaign killed half-way resumes with the artifacts it had not finished and loses
none it had. `triage_artifacts` does the same for a run that is not a campaign (`nnfuzz fuzz`).

`recheck_known` is the progression check: each finding of the database replayed on the current driver is still
reproducing, or fixed.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harness.campaign.classify import classify, classify_disagreement
from harness.campaign.config import CampaignConfig, TargetSpec
from harness.campaign.events import Event, FindingReported, KnownRechecked, Unreproduced
from harness.campaign.finding import EXPORT_FOLDER, Finding, folder_files, read_folder, stored_findings
from harness.campaign.findings_db import FIXED, NEW, REPRODUCING, FindingRecord, FindingsDB, now
from harness.campaign.folder import RunFolder, publish_folder, remove_leftovers
from harness.campaign.minimize import libfuzzer_minimize, reduce_structurally
from harness.case import Case
from harness.drivers import create_device, variants
from harness.engines import NotExportable, Origin, UnknownFormat, engine_model_of, export_case
from harness.hal import EngineExport
from harness.oracle.engines import ENGINES_DISAGREE
from harness.oracle.verdict import Verdict
from harness.runner import RunResult, UnknownTarget, WorkerPool, WorkerStartError, decode_bytes, resolve_target
from harness.runner.libfuzzer import FINDING_PREFIXES
from harness.runner.replay import shown_path


def replay_timeout(config: CampaignConfig) -> float:
    """How long an isolated replay may take: longer than libFuzzer's per-input limit, so a hang is named."""
    return max(2.0 * config.timeout_s, 20.0)


def artifact_kind(path: Path) -> str:
    """crash, timeout, oom or leak (libFuzzer's file name prefix)."""
    return path.name.split("-", 1)[0]


def artifacts(run: RunFolder, spec: TargetSpec, min_age_s: float = 0.0) -> list[Path]:
    """A target's libFuzzer artifacts, oldest first; those younger than min_age_s may still be being written."""
    folder = run.artifacts(spec.name)
    if not folder.is_dir():
        return []
    found = []
    cutoff = time.time() - min_age_s
    for p in folder.iterdir():
        if p.is_file() and p.name.startswith(FINDING_PREFIXES):
            try:
                mtime = p.stat().st_mtime
            except FileNotFoundError:
                continue
            if mtime <= cutoff:
                found.append((mtime, p.name, p))
    return [p for *_, p in sorted(found)]


class TriageError(RuntimeError):
    """Nothing can be replayed: the driver does not start (the artifact stays for a later run)."""


class Triage:
    """Turns artifacts into findings for one campaign run."""

    def __init__(
        self,
        config: CampaignConfig,
        run: RunFolder,
        db: FindingsDB,
        emit: Callable[[Event], None],
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        self.config, self.run, self.db, self.emit = config, run, db, emit
        self.should_stop = should_stop
        self.pool = WorkerPool(config.driver, list(config.faults), replay_timeout(config))
        # The same driver without the campaign's faults, to keep minimization on the planted bug (see _baseline).
        self.reference = WorkerPool(config.driver, [], replay_timeout(config)) if config.faults else None
        self.specs = {t.name: t for t in config.targets}
        remove_leftovers(run.findings)
        self.done: set[str] = set()
        self.hits: dict[str, int] = {}
        for entry in run.triage_journal:
            self.done.add(entry["artifact"])
            if entry.get("signature"):
                self.hits[entry["signature"]] = self.hits.get(entry["signature"], 0) + 1
        # Whole (with their input, case and traceback), as the findings this run stores next.
        self.stored: dict[str, Finding] = stored_findings(run.findings, content=True)
        # Verdict signatures of classified findings -> the signature they are stored under.
        self.aliases = {f.verdict_signature: s for s, f in self.stored.items() if f.verdict_signature}
        self.variant_pools: dict[str, WorkerPool] = {}  # the driver's variants, for classifying (see _classified)

    def close(self) -> None:
        """Stop the replay workers."""
        self.pool.close()
        if self.reference is not None:
            self.reference.close()
        for pool in self.variant_pools.values():
            pool.close()

    def key(self, spec: TargetSpec, artifact: Path) -> str:
        """The journal's name of an artifact."""
        return f"{spec.name}/{artifact.name}"

    def pending(self, min_age_s: float = 0.0) -> list[tuple[TargetSpec, Path]]:
        """Artifacts not triaged yet."""
        return [
            (spec, path)
            for spec in self.config.targets
            for path in artifacts(self.run, spec, min_age_s)
            if self.key(spec, path) not in self.done
        ]

    # -- one artifact ---------------------------------------------------------------------------------------------

    def triage(self, spec: TargetSpec, artifact: Path) -> Verdict | None:
        """Replay, name, deduplicate, minimize and store one artifact: its verdict (None if it was done before)."""
        key = self.key(spec, artifact)
        if key in self.done:
            return None
        data = artifact.read_bytes()
        try:
            result = self.pool.run(spec.ref, data)
        except WorkerStartError as exc:
            # The driver cannot even start: nothing can be named; the artifact stays for a later resume.
            raise TriageError(f"cannot replay {artifact}: {exc}") from exc
        verdict = result.verdict
        entry = {"artifact": key, "kind": artifact_kind(artifact), "time": now()}
        if verdict.ok:
            self._journal({**entry, "outcome": "unreproduced"})
            self.emit(Unreproduced(spec.name, str(artifact)))
            return verdict
        signature = self.aliases.get(verdict.signature, verdict.signature)
        if signature in self.stored:
            return self._duplicate(entry, verdict, signature)
        named = Finding.named(verdict, spec.name, spec.ref, self.config.driver, self.config.faults)
        record = self.db.fetch(signature)
        # A fixed finding's stored input no longer fails: this artifact is the one to keep (minimized afresh).
        if record is not None and record.status != FIXED and record.finding.payload is not None:
            # Found by an earlier campaign: its minimized form is in the database already.
            known = record.finding
            traceback_text = known.traceback or result.traceback_text
            found = _reproduced(named, known.input, known.case, known.minimized or "none", traceback_text)
        else:
            found = self._classified(spec, self._minimize(spec, data, result, named))
            if found.signature != signature:
                self.aliases[verdict.signature] = signature = found.signature
                if signature in self.stored:  # another graph of a bug this run has stored already
                    return self._duplicate(entry, verdict, signature)
                record = self.db.fetch(signature)
        finding = self._store(artifact, data, found)
        if finding.cls == "engine" and record is None:
            self._export(finding)
        kind = "known" if record is not None else "new"
        self._record(finding, record)
        self._journal({**entry, "outcome": verdict.outcome.value, "signature": signature, "as": kind})
        self.emit(FindingReported(finding, kind))
        return verdict

    def _duplicate(self, entry: dict, verdict: Verdict, signature: str) -> Verdict:
        self._count(signature)
        self._journal({**entry, "outcome": verdict.outcome.value, "signature": signature, "as": "duplicate"})
        self.emit(FindingReported(self.stored[signature], "duplicate"))
        return verdict

    def skip(self, spec: TargetSpec, artifact: Path, reason: str) -> None:
        """Journal an artifact as not replayed (it stays on disk)."""
        key = self.key(spec, artifact)
        if key not in self.done:
            self._journal(
                {
                    "artifact": key,
                    "kind": artifact_kind(artifact),
                    "time": now(),
                    "outcome": "skipped",
                    "reason": reason,
                }
            )

    def _count(self, signature: str) -> None:
        self.hits[signature] = self.hits.get(signature, 0) + 1
        record = self.db.fetch(signature)
        if record is not None:
            record.hits += 1
            record.last_seen, record.last_run = now(), self.run.name
            self.db.save(record)

    def _journal(self, entry: dict) -> None:
        self.run.triage_journal.append(entry)
        self.done.add(entry["artifact"])

    # -- minimizing ---------------------------------------------------------------------------------------------------

    def _minimize(self, spec: TargetSpec, data: bytes, result: RunResult, named: Finding) -> Finding:
        """The finding reproduced by the smallest input found in the time allowed (the artifact itself at worst)."""
        signature = result.verdict.signature
        deadline = time.monotonic() + self.config.minimize_s
        case = result.case if result.case is not None else self._decode(spec, data)
        if self.config.minimize_s <= 0:
            return _reproduced(named, data, case, "none", result.traceback_text)
        if case is not None:
            again = self._replay(spec, case)
            if again is not None and again.verdict.signature == signature:
                baseline = self._baseline(spec, case)
                last = {"result": again}
                same = self._same_failure(result.verdict)

                def still_fails(candidate: dict) -> bool:
                    if self.should_stop():
                        return False
                    r = self._replay(spec, candidate)
                    if r is None or not same(r.verdict) or not self._same_baseline(spec, candidate, baseline):
                        return False
                    last["result"] = r
                    return True

                reduction = reduce_structurally(case, still_fails, deadline)
                method = "structural" if reduction.accepted else "none"
                found = _reproduced(named, data, reduction.case, method, last["result"].traceback_text)
                return replace(found, sizes=reduction.sizes())
        if not self.should_stop():
            work = self.run.root / "minimize" / signature
            smaller = libfuzzer_minimize(
                spec.script,
                data,
                work,
                self.config.driver,
                self.config.faults,
                max(deadline - time.monotonic(), 5.0),
                self.config.timeout_s,
            )
            if smaller is not None:
                again = self._replay(spec, smaller)
                baseline = self._baseline(spec, data)
                if (
                    again is not None
                    and again.verdict.signature == signature
                    and self._same_baseline(spec, smaller, baseline)
                ):
                    return _reproduced(named, smaller, again.case or case, "libfuzzer", again.traceback_text)
        return _reproduced(named, data, case, "none", result.traceback_text)

    def _same_failure(self, verdict: Verdict) -> Callable[[Verdict], bool]:
        """What a reduced case must still show: the same verdict signature; on an engine, the same outcome and rule
        (a finding there is named after reduction, by the operation at its failing output: see _classified)."""
        if self._on_engine() and not self.config.faults:
            return lambda v: (v.outcome, v.rule) == (verdict.outcome, verdict.rule)
        return lambda v: v.signature == verdict.signature

    def _decode(self, spec: TargetSpec, data: bytes) -> dict | None:
        """The case JSON of fuzzer bytes, decoded here (harness code only) when the replay died before saying."""
        try:
            case = decode_bytes(resolve_target(spec.ref), data)
        except Exception:  # a generator bug: the bytes stay the repro
            return None
        if case is None:
            return None
        case_json = case.to_json()
        case.close()
        return case_json

    def _replay(self, spec: TargetSpec, payload: bytes | dict) -> RunResult | None:
        try:
            return self.pool.run(spec.ref, payload)
        except (ValueError, WorkerStartError):
            return None  # a reduced case the case format refuses: not a candidate

    # A smaller input may fail with the same signature for another reason: a status rule carries no stack frames,
    # so two validation bugs can share one. When the campaign plants faults, the driver without them tells the two
    # apart: a reduction must leave the input's verdict there as it was (passing, mostly), or it has drifted to a
    # bug the faults did not plant.

    def _baseline(self, spec: TargetSpec, payload: bytes | dict) -> str | None:
        if self.reference is None:
            return None
        try:
            verdict = self.reference.run(spec.ref, payload).verdict
        except (ValueError, WorkerStartError):
            return "unreplayable"
        return None if verdict.ok else verdict.signature

    def _same_baseline(self, spec: TargetSpec, payload: bytes | dict, baseline: str | None) -> bool:
        return self.reference is None or self._baseline(spec, payload) == baseline

    # -- classifying --------------------------------------------------------------------------------------------------

    def _classified(self, spec: TargetSpec, found: Finding) -> Finding:
        """On a driver over a third-party engine, the finding classified by differential re-runs of its reduced case
        and named by what that shows (harness.campaign.classify); other findings as they are."""
        disagreement = found.rule == ENGINES_DISAGREE  # compares the engines itself, on any driver
        if self.config.faults or found.case is None or self.should_stop():
            return found
        if not disagreement and not self._on_engine():
            return found
        replayed = self._replay(spec, found.case)
        if replayed is None or (replayed.verdict.outcome.value, replayed.verdict.rule) != (found.outcome, found.rule):
            return found  # the reduced case does not reproduce alone: nothing to compare on the variants
        if disagreement:
            result = classify_disagreement(replayed.verdict)
        else:
            result = classify(found.case, replayed.verdict, self.config.driver, self._replay_on)
        if result is None:
            return found
        return replace(
            found,
            signature=result.signature(found.outcome),
            verdict_signature=found.signature,
            classification=result.to_json(),
        )

    @functools.cache  # noqa: B019  (one Triage per run: the cache dies with it)
    def _on_engine(self) -> bool:
        """True when the campaign's driver runs on a third-party engine and declares variants to compare with."""
        if not variants(self.config.driver):
            return False
        device = create_device(self.config.driver)
        return isinstance(device, EngineExport) and device.engine_identity() is not None

    def _export(self, finding: Finding) -> None:
        """Write the standalone reproducer of an engine finding into its folder (export/), for the engine's owners;
        a finding that cannot be exported keeps its folder as it is."""
        if finding.case is None:
            return
        case = Case.from_json(finding.case)
        origin = Origin(finding.signature, finding.target, finding.outcome, finding.rule, finding.title,
                        finding.details, finding.driver, tuple(finding.faults), finding.folder)  # fmt: skip
        try:
            engine_model = engine_model_of(case, create_device(self.config.driver))
            export_case(case, engine_model, self.run.finding(finding.signature) / EXPORT_FOLDER, origin=origin)
        except (NotExportable, UnknownFormat, ValueError, OSError):
            return  # the finding stands without its reproducer; `nnfuzz export` says why
        finally:
            case.close()

    def _replay_on(self, driver: str, case: dict) -> Verdict | None:
        """A case replayed, isolated, on another variant of the driver (None when that variant cannot run it)."""
        pool = self.variant_pools.get(driver)
        if pool is None:
            pool = self.variant_pools[driver] = WorkerPool(driver, [], replay_timeout(self.config))
        try:
            return pool.run(case["target"], case).verdict
        except (WorkerStartError, UnknownTarget, ValueError):
            return None

    # -- storing ------------------------------------------------------------------------------------------------------

    def _store(self, artifact: Path, data: bytes, finding: Finding) -> Finding:
        """Publish the finding's folder in this run (or take the one stored before a kill)."""
        folder = self.run.finding(finding.signature)
        # Bytes of the artifact and of the input; how much the graph reduction removed, when it ran.
        size = len(finding.input) if finding.input is not None else None
        sizes = {**finding.sizes, "original": len(data), "input": size}
        finding = finding.placed(folder, self.run.name)
        finding = replace(finding, artifact=shown_path(artifact), sizes=sizes, stored=now())
        if not publish_folder(folder_files(finding, data), folder):
            finding = read_folder(folder, content=True)  # stored before a kill: keep that one
        self.stored[finding.signature] = finding
        self.hits[finding.signature] = self.hits.get(finding.signature, 0) + 1
        return finding

    def _record(self, finding: Finding, record: FindingRecord | None) -> None:
        stamp = now()
        run = self.run.name
        if record is None:
            self.db.save(FindingRecord(finding, NEW, stamp, run, stamp, run, hits=1))
            self.db.log(run, finding.signature, "found")
            return
        reopened = record.status == FIXED
        if record.first_run != run:
            record.status = REPRODUCING
        record.last_seen, record.last_run, record.hits = stamp, run, record.hits + 1
        # The stored finding: the database's own input when it had one that still fails, else a new one.
        record.finding = finding
        self.db.save(record)
        self.db.log(run, finding.signature, "reopened" if reopened else "seen")

    # -- progression ----------------------------------------------------------------------------------------------

    def recheck_known(self, names: Iterable[str]) -> list[KnownRechecked]:
        """Replay every stored finding of these targets (and this driver) on the current driver; update statuses."""
        names = set(names)
        results = []
        for record in self.db.records():
            finding = record.finding
            if finding.target not in names or finding.driver != self.config.driver or self.should_stop():
                continue
            payload = finding.payload
            if payload is None:
                continue
            try:
                resolve_target(finding.target_ref)
                replayed = self.pool.run(finding.target_ref, payload)
            except (UnknownTarget, ValueError):
                continue
            reproduces = replayed.verdict.signature == finding.replay_signature
            was = record.status
            if reproduces:
                record.status = REPRODUCING if record.first_run != self.run.name else NEW
                record.last_seen, record.last_run = now(), self.run.name
                what = "reopened" if was == FIXED else "reproducing"
            else:
                if was == FIXED:
                    continue  # still fixed: nothing to record
                record.status, record.fixed_run = FIXED, self.run.name
                what = "fixed"
            self.db.save(record)
            self.db.log(self.run.name, finding.signature, what)
            event = KnownRechecked(finding, record.status)
            results.append(event)
            self.emit(event)
        return results


def _reproduced(named: Finding, data: bytes | None, case: dict | None, method: str, traceback: str) -> Finding:
    """A named finding with what reproduces it: the input, the case, how they were minimized, the traceback."""
    return replace(named, input=data, case=case, minimized=method, traceback=traceback)


@dataclass
class Triaged:
    """What the triage of a run's artifacts found."""

    verdicts: dict[Path, Verdict]  # each artifact replayed: its verdict
    findings: dict[str, Finding]  # the findings of the run, by signature


def triage_artifacts(
    config: CampaignConfig, spec: TargetSpec, paths: Sequence[Path], emit: Callable[[Event], None] = lambda e: None
) -> Triaged:
    """Triage artifacts of one target into the run folder config.out_dir, recorded in config.db_path, as a campaign
    does (for a run that is not one: `nnfuzz fuzz`); TriageError if the driver does not start."""
    triage = Triage(config, RunFolder(config.out_dir), FindingsDB(config.db_path), emit)
    try:
        verdicts = {}
        for path in paths:
            verdict = triage.triage(spec, path)
            if verdict is not None:
                verdicts[path] = verdict
        return Triaged(verdicts, dict(triage.stored))
    finally:
        triage.close()
