"""Triage: every libFuzzer artifact replayed alone, named by its verdict's signature, deduplicated, minimized, stored.

An artifact whose signature this run already stored is a duplicate (counted). A signature new to this run is
stored once as a finding folder (input.bin, case.json, traceback.txt, finding.json with the repro commands),
written atomically, then recorded in the findings database: minimized afresh when the database has never seen
it, taken from the database when an earlier campaign found it. Each artifact is journalled when it is done, so a
campaign killed half-way resumes with the artifacts it had not finished and loses none it had.

`recheck_known` is the progression check: each finding of the database replayed on the current driver is still
reproducing, or fixed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.campaign.config import CampaignConfig, TargetSpec
from harness.campaign.events import Event, FindingReported, KnownRechecked, Unreproduced
from harness.campaign.findings_db import FIXED, NEW, REPRODUCING, FindingRecord, FindingsDB, now
from harness.campaign.folder import RunFolder, publish_folder, remove_leftovers
from harness.campaign.minimize import libfuzzer_minimize, reduce_case
from harness.runner import RunResult, UnknownTarget, WorkerPool, WorkerStartError, decode_bytes, resolve_target
from harness.runner.libfuzzer import FINDING_PREFIXES
from harness.runner.replay import repro_command, shown_path

FINDING_FILE = "finding.json"


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


@dataclass
class Minimized:
    """A finding's smallest known form."""

    data: bytes | None
    case: dict | None
    method: str  # structural | libfuzzer | none
    traceback: str
    runs: int = 0


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
        self.stored: dict[str, dict] = {}
        if run.findings.is_dir():
            for folder in run.findings.iterdir():
                info = folder / FINDING_FILE
                if info.is_file():
                    self.stored[folder.name] = json.loads(info.read_text())

    def close(self) -> None:
        """Stop the replay workers."""
        self.pool.close()
        if self.reference is not None:
            self.reference.close()

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

    def triage(self, spec: TargetSpec, artifact: Path) -> None:
        """Replay, name, deduplicate, minimize and store one artifact (nothing if it was done before)."""
        key = self.key(spec, artifact)
        if key in self.done:
            return
        data = artifact.read_bytes()
        try:
            result = self.pool.run(spec.ref, data)
        except WorkerStartError as exc:
            # The driver cannot even start: nothing can be named; the artifact stays for a later resume.
            raise RuntimeError(f"cannot replay {artifact}: {exc}") from exc
        verdict = result.verdict
        entry = {"artifact": key, "kind": artifact_kind(artifact), "time": now()}
        if verdict.ok:
            self._journal({**entry, "outcome": "unreproduced"})
            self.emit(Unreproduced(spec.name, str(artifact)))
            return
        signature = verdict.signature
        if signature in self.stored:
            self._count(signature)
            self._journal({**entry, "outcome": verdict.outcome.value, "signature": signature, "as": "duplicate"})
            self._report(self.stored[signature], "duplicate")
            return
        record = self.db.fetch(signature)
        # A fixed finding's stored input no longer fails: this artifact is the one to keep (minimized afresh).
        if record is not None and record.status != FIXED and (record.input is not None or record.case is not None):
            # Found by an earlier campaign: its minimized form is in the database already.
            traceback_text = record.traceback or result.traceback_text
            minimized = Minimized(record.input, record.case, record.minimized or "none", traceback_text)
        else:
            minimized = self._minimize(spec, data, result)
        info = self._store(spec, artifact, data, result, minimized)
        self._record(spec, info, minimized, record)
        self._journal({**entry, "outcome": verdict.outcome.value, "signature": signature, "as": info["first"]})
        self._report(info, info["first"])

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

    def _report(self, info: dict, kind: str) -> None:
        self.emit(
            FindingReported(
                info["signature"],
                info["target"],
                info["outcome"],
                info["rule"],
                info["title"],
                kind,
                info["folder"],
                info["repro"],
            )
        )

    # -- minimizing ---------------------------------------------------------------------------------------------------

    def _minimize(self, spec: TargetSpec, data: bytes, result: RunResult) -> Minimized:
        signature = result.verdict.signature
        deadline = time.monotonic() + self.config.minimize_s
        case = result.case if result.case is not None else self._decode(spec, data)
        if self.config.minimize_s <= 0:
            return Minimized(data, case, "none", result.traceback_text)
        if case is not None:
            again = self._replay(spec, case)
            if again is not None and again.verdict.signature == signature:
                baseline = self._baseline(spec, case)
                last = {"result": again}

                def still_fails(candidate: dict) -> bool:
                    if self.should_stop():
                        return False
                    r = self._replay(spec, candidate)
                    if (
                        r is None
                        or r.verdict.signature != signature
                        or not self._same_baseline(spec, candidate, baseline)
                    ):
                        return False
                    last["result"] = r
                    return True

                reduction = reduce_case(case, still_fails, deadline)
                method = "structural" if reduction.accepted else "none"
                return Minimized(data, reduction.case, method, last["result"].traceback_text, reduction.runs)
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
                    return Minimized(smaller, again.case or case, "libfuzzer", again.traceback_text)
        return Minimized(data, case, "none", result.traceback_text)

    def _decode(self, spec: TargetSpec, data: bytes) -> dict | None:
        """The case JSON of fuzzer bytes, decoded here (harness code only) when the replay died before saying."""
        try:
            case = decode_bytes(resolve_target(spec.ref), data)
        except Exception:  # a generator bug: the bytes stay the repro
            return None
        return case.to_json() if case is not None else None

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

    # -- storing ------------------------------------------------------------------------------------------------------

    def _store(self, spec: TargetSpec, artifact: Path, data: bytes, result: RunResult, m: Minimized) -> dict:
        verdict = result.verdict
        folder = self.run.finding(verdict.signature)
        config = self.config
        files: dict[str, bytes] = {"original.bin": data}
        if m.data is not None:
            files["input.bin"] = m.data
        if m.case is not None:
            files["case.json"] = (json.dumps(m.case, indent=1, sort_keys=True) + "\n").encode()
        files["traceback.txt"] = (m.traceback or "(no traceback: the verdict comes from the oracle)\n").encode()
        # The primary repro is the smallest faithful form: the reduced case, else the (minimized) bytes.
        primary = "case.json" if m.method == "structural" and m.case is not None else "input.bin"
        if primary not in files:
            primary = "case.json" if "case.json" in files else "original.bin"
        repros = {
            name: repro_command(folder / name, spec.ref, config.driver, config.faults)
            for name in ("case.json", "input.bin")
            if name in files
        }
        record = self.db.fetch(verdict.signature)
        info = {
            "signature": verdict.signature,
            "target": spec.name,
            "target_ref": spec.ref,
            "outcome": verdict.outcome.value,
            "rule": verdict.rule,
            "title": verdict.title,
            "details": verdict.details,
            "frames": list(verdict.frames),
            "driver": config.driver,
            "faults": list(config.faults),
            "run": self.run.name,
            "artifact": shown_path(artifact),
            "minimized": m.method,
            "sizes": {"original": len(data), "input": len(m.data) if m.data is not None else None},
            "repro": repros.get(primary, repro_command(folder / primary, spec.ref, config.driver, config.faults)),
            "repros": repros,
            "folder": shown_path(folder),
            "first": "known" if record is not None else "new",
            "stored": now(),
        }
        files[FINDING_FILE] = (json.dumps(info, indent=1, sort_keys=True) + "\n").encode()
        if not publish_folder(files, folder):
            info = json.loads((folder / FINDING_FILE).read_text())  # stored before a kill: keep that one
        self.stored[verdict.signature] = info
        self.hits[verdict.signature] = self.hits.get(verdict.signature, 0) + 1
        return info

    def _record(self, spec: TargetSpec, info: dict, m: Minimized, record: FindingRecord | None) -> None:
        stamp = now()
        run = self.run.name
        if record is None:
            record = FindingRecord(
                signature=info["signature"],
                target=spec.name,
                target_ref=spec.ref,
                outcome=info["outcome"],
                rule=info["rule"],
                title=info["title"],
                driver=self.config.driver,
                status=NEW,
                first_seen=stamp,
                first_run=run,
                last_seen=stamp,
                last_run=run,
                frames=info["frames"],
                faults=list(self.config.faults),
                hits=1,
                input=m.data,
                case=m.case,
                traceback=m.traceback,
                minimized=m.method,
                folder=info["folder"],
            )
            self.db.save(record)
            self.db.log(run, record.signature, "found")
            return
        reopened = record.status == FIXED
        if record.first_run != run:
            record.status = REPRODUCING
        record.last_seen, record.last_run, record.hits = stamp, run, record.hits + 1
        if reopened or (record.input is None and record.case is None):
            record.input, record.case, record.traceback, record.minimized = m.data, m.case, m.traceback, m.method
        record.folder = info["folder"]
        self.db.save(record)
        self.db.log(run, record.signature, "reopened" if reopened else "seen")

    # -- progression ----------------------------------------------------------------------------------------------

    def recheck_known(self, names: Iterable[str]) -> list[KnownRechecked]:
        """Replay every stored finding of these targets (and this driver) on the current driver; update statuses."""
        names = set(names)
        results = []
        for record in self.db.records():
            if record.target not in names or record.driver != self.config.driver or self.should_stop():
                continue
            payload = _replayable(record)
            if payload is None:
                continue
            try:
                resolve_target(record.target_ref)
                replayed = self.pool.run(record.target_ref, payload)
            except (UnknownTarget, ValueError):
                continue
            reproduces = replayed.verdict.signature == record.signature
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
            self.db.log(self.run.name, record.signature, what)
            event = KnownRechecked(record.signature, record.target, record.rule, record.status)
            results.append(event)
            self.emit(event)
        return results


def _replayable(record: FindingRecord) -> bytes | dict | None:
    """The stored form of a finding to replay: the reduced case when it was reduced, else the bytes."""
    if record.minimized == "structural" and record.case is not None:
        return record.case
    return record.input if record.input is not None else record.case
