"""Branch coverage of the driver over a campaign's time, measured by replaying its corpus under coverage.py.

An Atheris run writes no coverage data when it is stopped by time, so coverage is measured afterwards: every
corpus entry is replayed, in the order the campaign found it (the seeds first, at time 0), through the same
targets and driver in a separate process traced by coverage.py with branch measurement. After each checkpoint
time the arcs seen so far are noted; at the end one analysis says which arcs are branches, and the covered
branches at each checkpoint are counted from the notes. The coverage data file is kept in the run folder
(`coverage html --data-file=RUN/coverage/.coverage` shows it line by line).

The measuring process: `python -m harness.campaign.coverage_replay PLAN.json OUT.json`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.campaign.workers import launched


@dataclass
class CoveragePoint:
    """Coverage after replaying the corpus found by campaign time `t`."""

    t: float
    inputs: int
    branches_covered: int
    lines_covered: int


@dataclass
class CoverageResult:
    """The measurement: points over time and the driver's totals."""

    points: list[CoveragePoint] = field(default_factory=list)
    branches_total: int = 0
    lines_total: int = 0
    replayed: int = 0
    errors: int = 0
    ok: bool = True
    detail: str = ""

    @property
    def final(self) -> CoveragePoint | None:
        """The last point."""
        return self.points[-1] if self.points else None

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
        }

    @classmethod
    def from_json(cls, d: dict) -> CoverageResult:
        """The result a to_json dict describes."""
        points = [CoveragePoint(**p) for p in d.get("points", [])]
        keys = ("branches_total", "lines_total", "replayed", "errors", "ok", "detail")
        return cls(points, **{k: d[k] for k in keys if k in d})


def package_of(driver_spec: str) -> str:
    """The top-level package a driver spec's factory lives in: what is measured."""
    return driver_spec.partition(":")[0].split(".")[0]


def measure_coverage(
    inputs: Sequence[tuple[float, str, Path]],
    checkpoints: Sequence[float],
    driver: str,
    faults: Sequence[str],
    out_dir: Path,
    limit_s: float,
    retries: int = 5,
) -> CoverageResult:
    """Replay (time, target ref, file) inputs in a traced process; coverage at each checkpoint.

    An input that kills the replaying process (a crash the fuzzers tolerated, e.g. in a seed) is left out and the
    replay starts again, up to `retries` times.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    ordered = [[t, ref, str(path)] for t, ref, path in sorted(inputs, key=lambda i: i[0])]
    skipped: list[str] = []
    deadline = time.monotonic() + limit_s
    for _ in range(retries + 1):
        result, crashed = _replay(ordered, checkpoints, driver, faults, out_dir, deadline - time.monotonic())
        if crashed is None:
            if skipped:
                result.detail = f"{len(skipped)} input(s) left out: they kill the driver ({', '.join(skipped)})"
            return result
        skipped.append(Path(ordered[crashed][2]).name)
        del ordered[crashed]
    return CoverageResult(ok=False, detail=f"the corpus replay crashed {retries + 1} times ({', '.join(skipped)})")


def _replay(
    inputs: list[list],
    checkpoints: Sequence[float],
    driver: str,
    faults: Sequence[str],
    out_dir: Path,
    limit_s: float,
) -> tuple[CoverageResult, int | None]:
    """One replay process: its result, and the index of the input it died on (None if it did not)."""
    plan = {
        "driver": driver,
        "faults": list(faults),
        "package": package_of(driver),
        "data_file": str(out_dir / ".coverage"),
        "json_report": str(out_dir / "coverage.json"),
        "progress": str(out_dir / "progress"),
        "inputs": inputs,
        "checkpoints": sorted(set(checkpoints)),
    }
    plan_path, result_path, progress = out_dir / "plan.json", out_dir / "summary.json", out_dir / "progress"
    plan_path.write_text(json.dumps(plan))
    result_path.unlink(missing_ok=True)
    progress.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [os.getcwd(), os.environ.get("PYTHONPATH")] if p))
    with open(out_dir / "replay.log", "w") as log:
        command = [sys.executable, "-m", "harness.campaign.coverage_replay", str(plan_path), str(result_path)]
        process = subprocess.Popen(launched(command), stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            code = process.wait(timeout=max(limit_s, 1.0))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return CoverageResult(ok=False, detail="the corpus replay ran out of time"), None
    if code == 0 and result_path.is_file():
        return CoverageResult.from_json(json.loads(result_path.read_text())), None
    try:
        position = int(progress.read_text())
    except (OSError, ValueError):
        position = -1
    if code is not None and code < 0 and 0 <= position < len(inputs):
        return CoverageResult(ok=False), position  # killed by a signal while running that input
    detail = f"the corpus replay failed (exit code {code}; see {out_dir / 'replay.log'})"
    return CoverageResult(ok=False, detail=detail), None


# -- the measuring process ---------------------------------------------------------------------------------------


def _replay_main(plan_path: str, result_path: str) -> None:
    import coverage

    plan = json.loads(Path(plan_path).read_text())
    cov = coverage.Coverage(data_file=plan["data_file"], branch=True, source_pkgs=[plan["package"]], config_file=False)
    cov.start()
    # Everything of the driver is imported from here on, so its module-level code counts.
    from harness.drivers import create_device
    from harness.runner.execute import decode_bytes, resolve_target, run_case

    device = create_device(plan["driver"], faults=plan["faults"])
    targets: dict = {}
    inputs = plan["inputs"]
    progress = Path(plan["progress"])
    snapshots: list[tuple[float, int, dict[str, set]]] = []
    replayed = errors = 0
    position = 0
    for checkpoint in [*plan["checkpoints"], float("inf")]:
        while position < len(inputs) and inputs[position][0] <= checkpoint:
            _, ref, path = inputs[position]
            progress.write_text(str(position))  # if this input kills the process, the parent leaves it out
            position += 1
            try:
                target = targets.get(ref) or targets.setdefault(ref, resolve_target(ref))
                case = decode_bytes(target, Path(path).read_bytes())
                if case is not None:
                    run_case(target, case, device)
                    case.close()
                replayed += 1
            except Exception:  # a harness error on one entry must not lose the measurement of the others
                errors += 1
        if checkpoint != float("inf") or not snapshots or snapshots[-1][1] != position:
            data = cov.get_data()
            arcs = {os.path.realpath(f): set(data.arcs(f) or ()) for f in data.measured_files()}
            t = checkpoint if checkpoint != float("inf") else (inputs[-1][0] if inputs else 0.0)
            snapshots.append((t, position, arcs))
    cov.stop()
    cov.save()
    cov.json_report(outfile=plan["json_report"])
    report = json.loads(Path(plan["json_report"]).read_text())
    branches: dict[str, set] = {}
    statements: dict[str, set] = {}
    for name, info in report["files"].items():
        real = os.path.realpath(name)
        branches[real] = {tuple(b) for b in info.get("executed_branches", []) + info.get("missing_branches", [])}
        statements[real] = set(info.get("executed_lines", [])) | set(info.get("missing_lines", []))
    points = []
    for t, count, arcs in snapshots:
        covered_branches = sum(len(a & branches.get(f, set())) for f, a in arcs.items())
        covered_lines = sum(len(_lines(a) & statements.get(f, set())) for f, a in arcs.items())
        points.append(CoveragePoint(round(t, 3), count, covered_branches, covered_lines))
    result = CoverageResult(
        points,
        branches_total=sum(len(b) for b in branches.values()),
        lines_total=sum(len(s) for s in statements.values()),
        replayed=replayed,
        errors=errors,
    )
    Path(result_path).write_text(json.dumps(result.to_json()))


def _lines(arcs: set) -> set[int]:
    return {line for arc in arcs for line in arc if line > 0}


if __name__ == "__main__":
    _replay_main(sys.argv[1], sys.argv[2])
