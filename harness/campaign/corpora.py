"""Seeds and working corpora: what each target has, how much of the driver it reaches, minimizing a working corpus
and promoting a few of its entries into the seeds (`nnfuzz corpus`).

Seeds (`corpus/<target>`) are committed and campaigns never write them. A working corpus (`runs/corpus/<target>`
by default) is what campaigns grow and start from. Both are folders of files named by the SHA-1 of their bytes.

- `survey` counts both and measures the driver's branch coverage of the seeds alone and of seeds and working
  corpus together, per target and for all targets (one coverage.py replay, harness.campaign.coverage_replay, all
  targets on one device as a campaign's replay runs them: what an entry reaches can depend on what ran before it,
  so a target's figures may differ by a few branches from those of the target measured alone).
- `minimize` shrinks a working corpus with libFuzzer's `-merge=1`: the entries that add coverage features to what
  the seeds already reach, the smallest first; the new folder replaces the old one only once it is complete.
- `promote` copies into the seeds the entries of a greedy set cover: the fewest working-corpus entries that, with
  the seeds, reach every branch and line the seeds and the whole working corpus reach (measured by coverage.py, as
  the reports measure it, one target at a time), topped up while the seeds replayed alone still fall short.
  Nothing is written to the seeds unless asked.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.campaign.config import TargetSpec
from harness.campaign.corpus import drop_partial, entries, merge_corpus
from harness.campaign.coverage_replay import SEEDS, CoverageResult, measure_coverage

WORK = "work"  # the coverage group of working-corpus entries
DEFAULT_TIMEOUT_S = 20
DEFAULT_LIMIT_S = 1800.0
PROMOTE_ROUNDS = 3

Say = Callable[[str], None]
Progress = Callable[[int, int], None]


@dataclass
class TargetCorpus:
    """One target's seeds and working corpus: sizes and, when measured, the branches each reaches."""

    target: str
    seeds: int
    seed_bytes: int
    working: int
    working_bytes: int
    seed_folder: str
    working_folder: str
    seed_branches: int | None = None  # reached by the seeds alone
    branches: int | None = None  # reached by seeds and working corpus together
    seed_lines: int | None = None
    lines: int | None = None


@dataclass
class Survey:
    """Every target's corpora and the driver's coverage of all seeds and of everything."""

    targets: list[TargetCorpus]
    driver: str
    branches_total: int | None = None
    seed_branches: int | None = None
    branches: int | None = None
    coverage_detail: str = ""

    def to_json(self) -> dict:
        """The JSON form (`nnfuzz corpus --json`)."""
        return asdict(self)


@dataclass
class Minimized:
    """A working corpus before and after minimization."""

    target: str
    before: int
    after: int
    ok: bool
    detail: str = ""


@dataclass
class Promoted:
    """Entries copied from a working corpus into the seeds."""

    target: str
    entries: list[str] = field(default_factory=list)  # the seed files written
    seed_branches_before: int | None = None
    seed_branches_after: int | None = None  # seeds and promoted entries (= seeds and working corpus)
    ok: bool = True
    detail: str = ""


def _size(folder: Path) -> tuple[int, int]:
    names = entries(folder)
    return len(names), sum((folder / n).stat().st_size for n in names if (folder / n).is_file())


def restore_interrupted(working: Path) -> None:
    """Put back a working corpus a minimization killed between its two renames left aside."""
    old = working.with_name(f".{working.name}.old")
    if not working.exists() and old.is_dir():
        os.rename(old, working)


def survey(
    specs: Sequence[TargetSpec],
    seed_root: Path,
    work_root: Path,
    driver: str,
    *,
    coverage: bool = True,
    limit_s: float = DEFAULT_LIMIT_S,
    progress: Progress | None = None,
) -> Survey:
    """Sizes of every target's seeds and working corpus and, with `coverage`, the branches each reaches."""
    rows = []
    inputs: list[tuple[float, str, Path, str]] = []
    for spec in specs:
        seeds, working = seed_root / spec.name, work_root / spec.name
        restore_interrupted(working)
        n_seeds, seed_bytes = _size(seeds)
        n_work, work_bytes = _size(working)
        rows.append(TargetCorpus(spec.name, n_seeds, seed_bytes, n_work, work_bytes, str(seeds), str(working)))
        inputs += [(0.0, spec.ref, seeds / n, SEEDS) for n in entries(seeds)]
        inputs += [(0.0, spec.ref, working / n, WORK) for n in entries(working)]
    result = Survey(rows, driver)
    if not coverage or not inputs:
        return result
    with tempfile.TemporaryDirectory(prefix="nnfuzz-corpus-") as scratch:
        measured = measure_coverage(inputs, [0.0], driver, [], Path(scratch), limit_s, progress=progress)
    _fill(result, specs, measured)
    return result


def _fill(result: Survey, specs: Sequence[TargetSpec], measured: CoverageResult) -> None:
    result.coverage_detail = measured.detail
    if not measured.ok:
        return
    result.branches_total = measured.branches_total
    result.seed_branches = measured.groups.get(SEEDS, {}).get("branches", 0)
    result.branches = measured.final.branches_covered if measured.final else 0
    for row, spec in zip(result.targets, specs):
        seeds = measured.contexts.get(f"{spec.ref}|{SEEDS}", {})
        both = measured.targets.get(spec.ref, {})
        row.seed_branches, row.seed_lines = seeds.get("branches", 0), seeds.get("lines", 0)
        row.branches, row.lines = both.get("branches", 0), both.get("lines", 0)


def minimize(
    spec: TargetSpec,
    seed_root: Path,
    work_root: Path,
    driver: str,
    *,
    timeout_s: int = DEFAULT_TIMEOUT_S,
    limit_s: float = DEFAULT_LIMIT_S,
) -> Minimized:
    """libFuzzer -merge=1 of the working corpus over the seeds; the working corpus keeps what adds to them."""
    working = work_root / spec.name
    restore_interrupted(working)
    drop_partial(working)
    before = len(entries(working))
    if not before:
        return Minimized(spec.name, 0, 0, True, "empty")
    seeds = seed_root / spec.name
    scratch = work_root / f".{spec.name}.merge"
    shutil.rmtree(scratch, ignore_errors=True)
    merged, state = scratch / "corpus", scratch / "state"
    merged.mkdir(parents=True)
    seed_names = set(entries(seeds))
    for name in seed_names:  # counted first, so only what adds to the seeds is kept
        shutil.copyfile(seeds / name, merged / name)
    result = merge_corpus(spec.script, merged, [working], state, driver, [], timeout_s, limit_s)
    if not result.ok:
        return Minimized(spec.name, before, before, False, result.detail or "the merge failed")
    kept = [n for n in entries(merged) if n not in seed_names]
    fresh = work_root / f".{spec.name}.new"
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir()
    for name in kept:
        os.rename(merged / name, fresh / name)
    old = working.with_name(f".{working.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    os.rename(working, old)
    os.rename(fresh, working)
    shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)
    return Minimized(spec.name, before, len(kept), True)


def promote(
    specs: Sequence[TargetSpec],
    seed_root: Path,
    work_root: Path,
    driver: str,
    *,
    limit_s: float = DEFAULT_LIMIT_S,
    rounds: int = PROMOTE_ROUNDS,
    progress: Progress | None = None,
) -> list[Promoted]:
    """Copy into each target's seeds the fewest working-corpus entries that keep its coverage (a greedy set cover
    over the branches and lines the seeds do not reach); the files are named by the SHA-1 of their bytes.

    Each target is measured on a device of its own. What one entry reaches can depend on what ran before it on
    the device (kept prepared models, caches), so the seeds are then replayed alone: while they reach less than
    seeds and working corpus reached together, the set cover runs again over what is still missing (up to
    `rounds` times).
    """
    return [_promote(spec, seed_root, work_root, driver, limit_s, rounds, progress) for spec in specs]


def _promote(
    spec: TargetSpec, seed_root: Path, work_root: Path, driver: str, limit_s: float, rounds: int, progress
) -> Promoted:
    seeds, working = seed_root / spec.name, work_root / spec.name
    restore_interrupted(working)
    row = Promoted(spec.name)
    goal: int | None = None
    for _ in range(rounds):
        present = set(entries(seeds))
        # The smallest first: on a tie the set cover keeps the earlier, smaller entry.
        candidates = sorted((n for n in entries(working) if n not in present),
                            key=lambda n: ((working / n).stat().st_size, n))  # fmt: skip
        if not candidates:
            break
        inputs = [(0.0, spec.ref, seeds / n, SEEDS) for n in sorted(present)]
        inputs += [(0.0, spec.ref, working / n, WORK) for n in candidates]
        with tempfile.TemporaryDirectory(prefix="nnfuzz-promote-") as scratch:
            measured = measure_coverage(inputs, [0.0], driver, [], Path(scratch), limit_s, select=True,
                                        progress=progress)  # fmt: skip
        if not measured.ok or measured.selected is None:
            row.ok, row.detail = False, measured.detail or "coverage not measured"
            return row
        if goal is None:
            row.seed_branches_before = measured.contexts.get(f"{spec.ref}|{SEEDS}", {}).get("branches", 0)
            goal = measured.targets.get(spec.ref, {}).get("branches", 0)
        seeds.mkdir(parents=True, exist_ok=True)
        for _, _, path, _ in (inputs[i] for i in measured.selected):
            data = path.read_bytes()
            name = hashlib.sha1(data).hexdigest()
            if not (seeds / name).exists():
                tmp = seeds / f".{name}.tmp"
                tmp.write_bytes(data)
                os.replace(tmp, seeds / name)
                row.entries.append(name)
        with tempfile.TemporaryDirectory(prefix="nnfuzz-promote-") as nothing:
            now = survey([spec], seed_root, Path(nothing), driver, limit_s=limit_s)  # the seeds alone
        row.seed_branches_after = now.targets[0].seed_branches
        if not measured.selected or (row.seed_branches_after or 0) >= goal:
            break
    if goal is None:
        row.detail = "nothing in the working corpus that is not a seed already"
    return row
