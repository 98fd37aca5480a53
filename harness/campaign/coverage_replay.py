"""Branch coverage of the driver, measured by replaying corpus entries under coverage.py.

An Atheris run writes no coverage data when it is stopped by time, so coverage is measured afterwards: every
corpus entry is replayed, in the order the campaign found it (the seeds and the entries earlier campaigns left
first, at time 0), through the same targets and driver in a separate process traced by coverage.py with branch
measurement. After each checkpoint time the arcs seen so far are noted; at the end one analysis says which arcs are
branches, and the covered branches at each checkpoint are counted from the notes.

Each entry runs under a coverage.py dynamic context naming its target (and, when the caller gives one, its group:
"seeds", "work"), so the measurement also says which target reached what: per target its branches, those no other
target reached, and its branches per file; the HTML report (`html=True`, in OUT/html/) shows per line the targets
that ran it. With `select=True` every entry gets a context of its own, and the analysis picks a small set of the
non-seed entries that reaches every branch and line the seeds and all entries reach together (greedy set cover),
for promoting entries into the seeds.

The measuring process: `python -m harness.campaign.coverage_replay PLAN.json OUT.json`.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.campaign.workers import launched

SEEDS = "seeds"  # the group of the entries `select` keeps whatever happens
PROGRESS_S = 1.0


@dataclass
class CoveragePoint:
    """Coverage after replaying the corpus found by campaign time `t`."""

    t: float
    inputs: int
    branches_covered: int
    lines_covered: int


@dataclass
class CoverageResult:
    """The measurement: points over time, the driver's totals, per-file and per-target figures."""

    points: list[CoveragePoint] = field(default_factory=list)
    branches_total: int = 0
    lines_total: int = 0
    replayed: int = 0
    errors: int = 0
    ok: bool = True
    detail: str = ""
    # Per measured file: file (path from the package's parent), branches, covered, missing, lines, lines_covered,
    # html (its page in the HTML report).
    files: list[dict] = field(default_factory=list)
    # Per target ref: branches (covered), only (covered by no other target), lines, files {file: covered branches}.
    targets: dict[str, dict] = field(default_factory=dict)
    # Per context ("<ref>" or "<ref>|<group>"): branches, lines covered by the entries of that context alone.
    contexts: dict[str, dict] = field(default_factory=dict)
    groups: dict[str, dict] = field(default_factory=dict)  # per group (all targets): branches, lines
    html: str | None = None  # the HTML report's index.html, when written
    selected: list[int] | None = None  # with select: the indices (into the inputs given) of the entries picked
    skipped: list[str] = field(default_factory=list)  # inputs left out because they kill the driver

    @property
    def final(self) -> CoveragePoint | None:
        """The last point."""
        return self.points[-1] if self.points else None

    @property
    def start(self) -> CoveragePoint | None:
        """The first point (time 0: the seeds and the entries carried from earlier campaigns)."""
        return self.points[0] if self.points else None

    def to_json(self) -> dict:
        """coverage/summary.json."""
        return {
            "points": [p.__dict__ for p in self.points],
            "branches_total": self.branches_total,
            "lines_total": self.lines_total,
            "replayed": self.replayed,
            "errors": self.errors,
            "ok": self.ok,
            "detail": self.detail,
            "files": self.files,
            "targets": self.targets,
            "contexts": self.contexts,
            "groups": self.groups,
            "html": self.html,
            "selected": self.selected,
            "skipped": self.skipped,
        }

    @classmethod
    def from_json(cls, d: dict) -> CoverageResult:
        """The result a to_json dict describes."""
        points = [CoveragePoint(**p) for p in d.get("points", [])]
        keys = (
            "branches_total",
            "lines_total",
            "replayed",
            "errors",
            "ok",
            "detail",
            "files",
            "targets",
            "contexts",
            "groups",
            "html",
            "selected",
            "skipped",
        )
        return cls(points, **{k: d[k] for k in keys if k in d})


def package_of(driver_spec: str) -> str:
    """The top-level package a driver spec's factory lives in: what is measured."""
    return driver_spec.partition(":")[0].split(".")[0]


Input = tuple[float, str, Path] | tuple[float, str, Path, str]


def measure_coverage(
    inputs: Sequence[Input],
    checkpoints: Sequence[float],
    driver: str,
    faults: Sequence[str],
    out_dir: Path,
    limit_s: float,
    retries: int = 5,
    *,
    html: bool = False,
    select: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> CoverageResult:
    """Replay (time, target ref, file[, group]) inputs in a traced process; coverage at each checkpoint.

    An input that kills the replaying process (a crash the fuzzers tolerated, e.g. in a seed) is left out and the
    replay starts again, up to `retries` times. `progress(done, total)` is called about once a second.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    given = [[t, ref, str(path), rest[0] if rest else "", i] for i, (t, ref, path, *rest) in enumerate(inputs)]
    ordered = sorted(given, key=lambda i: i[0])
    skipped: list[str] = []
    deadline = time.monotonic() + limit_s
    for _ in range(retries + 1):
        result, crashed = _replay(ordered, checkpoints, driver, faults, out_dir, deadline - time.monotonic(),
                                  html, select, progress)  # fmt: skip
        if crashed is None:
            result.skipped = skipped
            if skipped:
                result.detail = f"{len(skipped)} input(s) left out: they kill the driver ({', '.join(skipped)})"
            return result
        skipped.append(Path(ordered[crashed][2]).name)
        del ordered[crashed]
    return CoverageResult(
        ok=False, detail=f"the corpus replay crashed {retries + 1} times ({', '.join(skipped)})", skipped=skipped
    )


def _replay(
    inputs: list[list],
    checkpoints: Sequence[float],
    driver: str,
    faults: Sequence[str],
    out_dir: Path,
    limit_s: float,
    html: bool,
    select: bool,
    progress: Callable[[int, int], None] | None,
) -> tuple[CoverageResult, int | None]:
    """One replay process: its result, and the index of the input it died on (None if it did not)."""
    plan = {
        "driver": driver,
        "faults": list(faults),
        "package": package_of(driver),
        "data_file": str(out_dir / ".coverage"),
        "json_report": str(out_dir / "coverage.json"),
        "html": str(out_dir / "html") if html else None,
        "select": select,
        "progress": str(out_dir / "progress"),
        "inputs": inputs,
        "checkpoints": sorted(set(checkpoints)),
    }
    plan_path, result_path, progress_path = out_dir / "plan.json", out_dir / "summary.json", out_dir / "progress"
    plan_path.write_text(json.dumps(plan))
    result_path.unlink(missing_ok=True)
    progress_path.unlink(missing_ok=True)
    Path(plan["data_file"]).unlink(missing_ok=True)  # a data file of an earlier replay would add to this one
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [os.getcwd(), os.environ.get("PYTHONPATH")] if p))
    with open(out_dir / "replay.log", "w") as log:
        command = [sys.executable, "-m", "harness.campaign.coverage_replay", str(plan_path), str(result_path)]
        process = subprocess.Popen(launched(command), stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + max(limit_s, 1.0)
        code = None
        while code is None:
            try:
                code = process.wait(timeout=PROGRESS_S)
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    process.kill()
                    process.wait()
                    return CoverageResult(ok=False, detail="the corpus replay ran out of time"), None
                if progress is not None:
                    progress(_done(progress_path), len(inputs))
    if code == 0 and result_path.is_file():
        if progress is not None:
            progress(len(inputs), len(inputs))
        return CoverageResult.from_json(json.loads(result_path.read_text())), None
    position = _position(progress_path)
    if code is not None and code < 0 and position is not None:
        # Killed by a signal while running that input: where it is in the list this process was given.
        where = next((k for k, item in enumerate(inputs) if item[4] == position), None)
        if where is not None:
            return CoverageResult(ok=False), where
    detail = f"the corpus replay failed (exit code {code}; see {out_dir / 'replay.log'})"
    return CoverageResult(ok=False, detail=detail), None


def _position(progress: Path) -> int | None:
    """The index (as given) of the input the replay was running, from its progress file "index done"."""
    try:
        return int(progress.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _done(progress: Path) -> int:
    try:
        return int(progress.read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0


# -- the measuring process ---------------------------------------------------------------------------------------


def _display(path: str, package: str) -> str:
    """A measured file as a path from its package's parent folder (driver_under_test/device.py)."""
    parts = Path(path).parts
    if package in parts:
        return str(Path(*parts[parts.index(package) :]))
    return path


def _replay_main(plan_path: str, result_path: str) -> None:
    import coverage

    plan = json.loads(Path(plan_path).read_text())
    select = bool(plan.get("select"))
    cov = coverage.Coverage(data_file=plan["data_file"], branch=True, source_pkgs=[plan["package"]], config_file=False)
    cov.start()
    # Everything of the driver is imported from here on, so its module-level code counts.
    from harness.drivers import create_device
    from harness.runner.execute import decode_bytes, resolve_target, run_case

    device = create_device(plan["driver"], faults=plan["faults"])
    targets: dict = {}
    inputs = plan["inputs"]  # [t, ref, path, group, index as given]
    checkpoints = [*plan["checkpoints"], float("inf")]
    # By checkpoint, then by context: few context switches (each costs a flush of the data), and each target's
    # entries still in the order they were found.
    context_of = (lambda item: str(item[4])) if select else (lambda item: _context(item[1], item[3]))
    buckets: list[list[list]] = [[] for _ in checkpoints]
    for item in inputs:
        buckets[bisect_left(checkpoints, item[0])].append(item)
    progress = Path(plan["progress"])
    snapshots: list[tuple[float, int, dict[str, set]]] = []
    replayed = errors = done = 0
    context = None
    for checkpoint, bucket in zip(checkpoints, buckets):
        for item in sorted(bucket, key=lambda i: (_context(i[1], i[3]), i[0])) if not select else bucket:
            _, ref, path, _, index = item
            progress.write_text(f"{index} {done}")  # if this input kills the process, the parent leaves it out
            done += 1
            if context_of(item) != context:
                context = context_of(item)
                cov.switch_context(context)
            try:
                target = targets.get(ref) or targets.setdefault(ref, resolve_target(ref))
                case = decode_bytes(target, Path(path).read_bytes())
                if case is not None:
                    run_case(target, case, device)
                    case.close()
                replayed += 1
            except Exception:  # a harness error on one entry must not lose the measurement of the others
                errors += 1
        if checkpoint != float("inf") or not snapshots or snapshots[-1][1] != done:
            data = cov.get_data()
            arcs = {os.path.realpath(f): set(data.arcs(f) or ()) for f in data.measured_files()}
            t = checkpoint if checkpoint != float("inf") else (max((i[0] for i in inputs), default=0.0))
            snapshots.append((t, done, arcs))
    progress.write_text(f"-1 {done}")
    cov.stop()
    cov.save()
    cov.json_report(outfile=plan["json_report"])
    report = json.loads(Path(plan["json_report"]).read_text())
    html_index = None
    if plan.get("html"):
        cov.html_report(directory=plan["html"], show_contexts=not select, title="nnfuzz: driver coverage")
        html_index = str(Path(plan["html"]) / "index.html")
    branches: dict[str, set] = {}
    statements: dict[str, set] = {}
    files = []
    for name, info in report["files"].items():
        real = os.path.realpath(name)
        branches[real] = {tuple(b) for b in info.get("executed_branches", []) + info.get("missing_branches", [])}
        statements[real] = set(info.get("executed_lines", [])) | set(info.get("missing_lines", []))
        summary = info.get("summary", {})
        files.append(
            {
                "file": _display(real, plan["package"]),
                "branches": summary.get("num_branches", 0),
                "covered": summary.get("covered_branches", 0),
                "missing": summary.get("missing_branches", 0),
                "lines": summary.get("num_statements", 0),
                "lines_covered": summary.get("covered_lines", 0),
                "html": _html_page(name) if html_index else None,
                "_real": real,
            }
        )
    points = []
    for t, count, arcs in snapshots:
        covered_branches = sum(len(a & branches.get(f, set())) for f, a in arcs.items())
        covered_lines = sum(len(_lines(a) & statements.get(f, set())) for f, a in arcs.items())
        points.append(CoveragePoint(round(t, 3), count, covered_branches, covered_lines))
    data = cov.get_data()
    by_context = _context_arcs(plan["data_file"], data)
    result = CoverageResult(
        points,
        branches_total=sum(len(b) for b in branches.values()),
        lines_total=sum(len(s) for s in statements.values()),
        replayed=replayed,
        errors=errors,
        html=html_index,
    )
    if select:
        per_input = {int(ctx): arcs for ctx, arcs in by_context.items() if ctx.isdigit()}
        by_context = _group(per_input, {int(i[4]): _context(i[1], i[3]) for i in inputs})
        result.selected = _cover(per_input, [int(i[4]) for i in inputs if i[3] == SEEDS], branches, statements)
    covered_by = {ctx: _covered(arcs, branches, statements) for ctx, arcs in by_context.items() if ctx}
    result.contexts = {ctx: {"branches": len(b), "lines": len(s)} for ctx, (b, s) in covered_by.items()}
    # What ran before the first entry (importing the driver, creating the device) counts for every group, as it
    # would for any of them replayed alone; it belongs to no target.
    base = _covered(by_context.get("", {}), branches, statements)
    groups: dict[str, tuple[set, set]] = {}
    for ctx, (b, s) in covered_by.items():
        have = groups.setdefault(ctx.partition("|")[2], (set(base[0]), set(base[1])))
        have[0].update(b)
        have[1].update(s)
    result.groups = {g: {"branches": len(b), "lines": len(s)} for g, (b, s) in groups.items()}
    result.targets = _per_target(covered_by, files)
    for f in files:
        del f["_real"]
    result.files = files
    Path(result_path).write_text(json.dumps(result.to_json()))


def _context(ref: str, group: str) -> str:
    return f"{ref}|{group}" if group else ref


def _html_page(measured_name: str) -> str:
    """The page coverage.py's HTML report gives a measured file (as its index links it)."""
    from coverage.files import flat_rootname

    return flat_rootname(measured_name) + ".html"


def _context_arcs(data_file: str, data) -> dict[str, dict[str, set]]:
    """{context: {real path: arcs}} of a coverage data file."""
    try:
        # One query over coverage.py's documented SQLite schema (file, context, arc): thousands of contexts in
        # well under a second.
        out: dict[str, dict[str, set]] = {}
        with sqlite3.connect(data_file) as db:
            rows = db.execute(
                "SELECT context.context, file.path, arc.fromno, arc.tono FROM arc "
                "JOIN context ON arc.context_id = context.id JOIN file ON arc.file_id = file.id"
            )
            for context, path, a, b in rows:
                out.setdefault(context, {}).setdefault(os.path.realpath(path), set()).add((a, b))
        return out
    except sqlite3.Error:
        # Another schema: the public API, one query per context and file (slower).
        out = {}
        for context in data.measured_contexts():
            data.set_query_contexts([f"^{re.escape(context)}$"])
            out[context] = {os.path.realpath(f): set(data.arcs(f) or ()) for f in data.measured_files()}
        data.set_query_contexts(None)
        return out


def _group(per_input: dict[int, dict[str, set]], contexts: dict[int, str]) -> dict[str, dict[str, set]]:
    grouped: dict[str, dict[str, set]] = {}
    for index, arcs in per_input.items():
        into = grouped.setdefault(contexts[index], {})
        for f, a in arcs.items():
            into.setdefault(f, set()).update(a)
    return grouped


def _covered(arcs: dict[str, set], branches: dict[str, set], statements: dict[str, set]) -> tuple[set, set]:
    """(covered branches, covered lines) as (file, item) pairs."""
    covered_branches = {(f, b) for f, a in arcs.items() for b in a & branches.get(f, set())}
    covered_lines = {(f, n) for f, a in arcs.items() for n in _lines(a) & statements.get(f, set())}
    return covered_branches, covered_lines


def _per_target(covered_by: dict[str, tuple[set, set]], files: list[dict]) -> dict[str, dict]:
    """Per target ref: branches and lines its contexts cover, branches no other target covers, per file."""
    union: dict[str, tuple[set, set]] = {}
    for ctx, (b, s) in covered_by.items():
        ref = ctx.split("|")[0]
        have = union.setdefault(ref, (set(), set()))
        have[0].update(b)
        have[1].update(s)
    display = {f["_real"]: f["file"] for f in files}
    out = {}
    for ref, (b, s) in sorted(union.items()):
        others = set().union(*(ob for r, (ob, _) in union.items() if r != ref))
        per_file: dict[str, int] = {}
        for f, _ in b:
            name = display.get(f, f)
            per_file[name] = per_file.get(name, 0) + 1
        out[ref] = {"branches": len(b), "only": len(b - others), "lines": len(s), "files": per_file}
    return out


def _cover(
    per_input: dict[int, dict[str, set]], fixed: list[int], branches: dict[str, set], statements: dict[str, set]
) -> list[int]:
    """Greedy set cover: entries (not in `fixed`) that together with `fixed` reach every branch and line all
    entries reach; the one adding most first (ties: the lower index, i.e. the smaller file when sorted so)."""

    def items(index: int) -> set:
        b, s = _covered(per_input.get(index, {}), branches, statements)
        return {("b", *x) for x in b} | {("l", *x) for x in s}

    covered: set = set()
    for index in fixed:
        covered |= items(index)
    candidates = {i: items(i) - covered for i in per_input if i not in set(fixed)}
    candidates = {i: c for i, c in candidates.items() if c}
    picked = []
    while candidates:
        best = max(candidates, key=lambda i: (len(candidates[i]), -i))
        gain = candidates.pop(best)
        picked.append(best)
        covered |= gain
        candidates = {i: c - gain for i, c in candidates.items()}
        candidates = {i: c for i, c in candidates.items() if c}
    return sorted(picked)


def _lines(arcs: set) -> set[int]:
    return {line for arc in arcs for line in arc if line > 0}


if __name__ == "__main__":
    _replay_main(sys.argv[1], sys.argv[2])
