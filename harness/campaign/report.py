"""The campaign report: everything the run folder and the findings database say about one run, as one dict.

report.json is that dict; report.html renders it (harness.campaign.html). The report is built from files only,
so it can be rebuilt for any run folder at any time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.campaign.config import CampaignConfig
from harness.campaign.corpus import entries
from harness.campaign.finding import EXPORT_FOLDER, FOLDER_FILES, Finding, stored_findings
from harness.campaign.findings_db import FIXED, NEW, FindingRecord, FindingsDB, RunRecord
from harness.campaign.folder import RunFolder, atomic_write_json, atomic_write_text

REPORT_VERSION = 2  # 2: working corpora (carried, found) instead of merges; per-file and per-target coverage


def _percent(part: int | None, whole: int | None) -> float | None:
    return round(100.0 * part / whole, 2) if part is not None and whole else None


def _link(run: RunFolder, path: Path) -> str:
    """A path relative to the run folder (where the report is), as a link."""
    return os.path.relpath(path.resolve(), run.root.resolve())


def _finding_row(run: RunFolder, finding: Finding, stored: bool, record: FindingRecord | None, hits: int) -> dict:
    """A finding of the report: the finding (stored in this run's folder, or the database's) and its status."""
    folder = run.finding(finding.signature) if stored else (Path(finding.folder) if finding.folder else None)
    files = {}
    if folder is not None and folder.is_dir():
        files = {name: _link(run, folder / name) for name in FOLDER_FILES if (folder / name).is_file()}
        if (folder / EXPORT_FOLDER / "README.md").is_file():
            files[EXPORT_FOLDER] = _link(run, folder / EXPORT_FOLDER)
    return {
        **finding.to_json(content=False),
        "class": finding.cls,
        "graph": reduced_graph(finding.case),
        "status": record.status if record else NEW,
        "new": bool(record and record.first_run == run.name),
        "first_seen": record.first_seen if record else None,
        "first_run": record.first_run if record else run.name,
        "last_seen": record.last_seen if record else None,
        "fixed_run": record.fixed_run if record else None,
        "hits": hits,
        "total_hits": record.hits if record else hits,
        "files": files,
    }


# Findings on an engine first by class (bugs before divergences), then the driver's own findings.
_CLASS_ORDER = {"engine": 0, "translation": 1, "plumbing": 2, "unclassified": 3, "divergence": 4, "": 5}


def reduced_graph(case: dict | None) -> list[str]:
    """A finding's (reduced) model, one line per operation of main: its type and its operands' types and shapes."""
    if not case or not isinstance(case.get("model"), dict):
        return []
    operands = case["model"].get("operands", [])

    def operand(i: int) -> str:
        o = operands[i] if 0 <= i < len(operands) else {}
        return f"{o.get('type', '?')}{o.get('dimensions', [])}"

    return [
        f"{op.get('type')}({', '.join(operand(i) for i in op.get('inputs', []))}) -> "
        f"{', '.join(operand(i) for i in op.get('outputs', []))}"
        for op in case["model"].get("operations", [])
    ]


def _previous_run(db: FindingsDB, run: RunFolder, driver: str) -> RunRecord | None:
    runs = [r for r in db.runs() if r.id != run.name and r.driver == driver and r.ended]
    mine = next((r for r in db.runs() if r.id == run.name), None)
    if mine is not None:
        runs = [r for r in runs if (r.started, r.id) < (mine.started, mine.id)]
    return runs[-1] if runs else None


def build_report(run: RunFolder, db: FindingsDB, errors: list[str] | None = None) -> dict:
    """The report of a run folder."""
    config = CampaignConfig.from_json(run.read_json(run.settings))
    state = run.read_json(run.state, {}) or {}
    timeline = list(run.timeline)
    journal = list(run.triage_journal)
    stored = stored_findings(run.findings)
    records = {r.finding.signature: r for r in db.records()}
    sightings = db.sightings(run.name)

    hits: dict[str, int] = {}
    for entry in journal:
        if entry.get("signature"):
            hits[entry["signature"]] = hits.get(entry["signature"], 0) + 1
    rows = {sig: _finding_row(run, f, True, records.get(sig), hits.get(sig, 0)) for sig, f in stored.items()}
    rechecked: dict[str, str] = {}
    for _, signature, _, what in sightings:
        # A sighting is logged for a record it saved: the record is there.
        if what in ("reproducing", "fixed", "reopened") and signature in records:
            rechecked[signature] = what
            if signature not in rows:
                rows[signature] = _finding_row(run, records[signature].finding, False, records[signature], 0)
    for signature, what in rechecked.items():
        rows[signature]["rechecked"] = what
    findings = sorted(
        rows.values(),
        key=lambda r: (
            _CLASS_ORDER.get(r["class"], 0),
            not r["new"],
            r["status"] == FIXED,
            r["target"],
            r["signature"],
        ),
    )

    active_s = float(state.get("active_s", 0.0))
    last = timeline[-1]["targets"] if timeline else {}
    coverage = run.read_json(run.coverage / "summary.json")
    reached = (coverage or {}).get("targets") or {}
    targets = {}
    for spec in config.targets:
        ts = state.get("targets", {}).get(spec.name, {})
        sample = last.get(spec.name, {})
        execs = int(sample.get("execs", ts.get("execs", 0)) or 0)
        worker_s = float(ts.get("spent_s", 0.0))
        targets[spec.name] = {
            "execs": execs,
            "execs_per_second": round(execs / worker_s, 1) if worker_s else None,
            "worker_seconds": round(worker_s, 1),
            "workers": ts.get("workers", 0),
            "restarts": ts.get("restarts", 0),
            "disabled": ts.get("disabled", ""),
            "libfuzzer_coverage": sample.get("coverage", ts.get("coverage")),
            "features": sample.get("features", ts.get("features")),
            "corpus": {
                "seeds": len(ts.get("seeds", [])),
                "carried": ts.get("carried", 0),
                "found": sample.get("found", 0),
                "working": len(entries(config.working_corpus(spec.name))),
            },
            "findings": sum(1 for f in findings if f["target"] == spec.name and f["hits"]),
            "reached": _reached(reached.get(spec.ref)),
        }
    total_execs = sum(t["execs"] for t in targets.values())

    coverage_report = None
    if coverage is not None:
        final = coverage["points"][-1] if coverage.get("points") else None
        start = coverage["points"][0] if coverage.get("points") else None
        html = coverage.get("html")
        files = sorted(coverage.get("files") or [], key=lambda f: (-f["missing"], -f["branches"], f["file"]))
        for f in files:
            f["href"] = _link(run, Path(html).parent / f["html"]) if html and f.get("html") else None
        coverage_report = {
            **{k: v for k, v in coverage.items() if k not in ("files", "targets", "contexts")},
            "branches_covered": final["branches_covered"] if final else None,
            "branch_percent": _percent(final["branches_covered"], coverage.get("branches_total")) if final else None,
            "lines_covered": final["lines_covered"] if final else None,
            "line_percent": _percent(final["lines_covered"], coverage.get("lines_total")) if final else None,
            "start_branches_covered": start["branches_covered"] if start else None,
            "data_file": _link(run, run.coverage / ".coverage"),
            "html": _link(run, Path(html)) if html else None,
            "files": files,
        }

    unreproduced = [
        {"artifact": e["artifact"], "kind": e.get("kind"), "file": _link(run, run.root / "targets" / _artifact_path(e))}
        for e in journal
        if e.get("outcome") == "unreproduced"
    ]
    skipped: dict[str, int] = {}
    for e in journal:
        if e.get("outcome") == "skipped":
            name = e["artifact"].partition("/")[0]
            skipped[name] = skipped.get(name, 0) + 1
    new = [f["signature"] for f in findings if f["new"]]
    fixed = [s for s, what in rechecked.items() if what == "fixed"]
    reopened = [s for s, what in rechecked.items() if what == "reopened"]
    reproducing = [f["signature"] for f in findings if not f["new"] and f["status"] != FIXED]
    previous = _previous_run(db, run, config.driver)
    since_last: dict = {"previous_run": previous.id if previous else None, "new": new, "fixed": fixed}
    since_last.update({"reopened": reopened, "still_reproducing": reproducing})
    if previous is not None:
        before = _read_json(Path(previous.folder) / "report.json")
        if before:
            since_last["previous"] = {
                "branches_covered": (before.get("coverage") or {}).get("branches_covered"),
                "execs_per_second": before.get("totals", {}).get("execs_per_second"),
                "corpus": {n: t.get("corpus") for n, t in before.get("targets", {}).items()},
            }

    return {
        "version": REPORT_VERSION,
        "run": {
            "id": run.name,
            "folder": str(run.root),
            "created": state.get("created"),
            "driver": config.driver,
            "faults": list(config.faults),
            "targets": [t.name for t in config.targets],
            "jobs": config.jobs,
            "budget_seconds": config.budget_s,
            "fuzz_seconds": round(active_s, 1),
            "sessions": state.get("sessions", []),
            "interrupted": bool(state.get("interrupted")),
            "corpus_root": str(config.corpus_root),
            "work_corpus": str(config.work_corpus) if config.work_corpus else None,
            "database": str(config.db_path),
        },
        "totals": {
            "execs": total_execs,
            "execs_per_second": round(total_execs / active_s, 1) if active_s else None,
            "findings": {"new": len(new), "reproducing": len(reproducing), "fixed": len(fixed)},
            "by_class": _by_class(findings),
            "corpus_carried": sum(t["corpus"]["carried"] for t in targets.values()),
            "corpus_found": sum(t["corpus"]["found"] for t in targets.values()),
        },
        "targets": targets,
        "timeline": timeline,
        "coverage": coverage_report,
        "findings": findings,
        "since_last": since_last,
        "unreproduced": unreproduced,
        "not_replayed": skipped,
        "errors": list(errors or []),
    }


def _by_class(findings: list[dict]) -> dict[str, list[str]]:
    """Signatures of the findings on an engine by class (divergences apart from the bugs); {} for a driver's own."""
    classes: dict[str, list[str]] = {}
    for f in findings:
        if f.get("class"):
            classes.setdefault(f["class"], []).append(f["signature"])
    return classes


def _reached(figures: dict | None) -> dict | None:
    """What one target's entries reached: branches, branches no other target reached, its files by branches."""
    if not figures:
        return None
    files = sorted(figures.get("files", {}).items(), key=lambda kv: (-kv[1], kv[0]))
    return {"branches": figures["branches"], "only": figures["only"], "lines": figures["lines"], "files": dict(files)}


def _artifact_path(entry: dict) -> str:
    target, _, name = entry["artifact"].partition("/")
    return f"{target}/findings/{name}"


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def write_report(run: RunFolder, report: dict) -> None:
    """report.json and report.html in the run folder."""
    from harness.campaign.html import render_html

    atomic_write_json(run.report_json, report)
    atomic_write_text(run.report_html, render_html(report))
