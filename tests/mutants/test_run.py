"""Running mutants: the mutated copy is what the worker runs, through the HAL; a mutant the targets can tell apart is
killed, one they cannot reach survives, one that breaks the driver's start-up is killed at start; the tree stays."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from harness.mutants import KILLED, KILLED_AT_START, SURVIVED, Config, Mutant, edits, package_root, run_mutants, summary
from harness.mutants.operators import Edit

PACKAGE, ROOT = package_root("driver_under_test:create_device")


def _digest(root: Path) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(root.rglob("*.py")))).hexdigest()


def _mutant(mutant_id: str, path: str, line_text: str, operator: str) -> Mutant:
    """The one mutant of `operator` on the line of `path` that holds `line_text` (found by text, not by line number,
    so that the test survives edits elsewhere in the driver)."""
    lines = (ROOT / path).read_text().splitlines()
    [line] = [k + 1 for k, text in enumerate(lines) if line_text in text]
    [edit] = [e for e in edits((ROOT / path).read_text()) if e.line == line and e.operator == operator]
    return Mutant(mutant_id, PACKAGE, path, edit)


def _start_marker() -> Mutant:
    """The factory raises with the path of the module it runs from: the copy's, if the copy is what runs."""
    source = (ROOT / "__init__.py").read_text()
    text = "return DriverDevice(build_options(**options), resolve(faults))"
    start = len(source[: source.index(text)].encode())
    after = "raise RuntimeError(f'mutant marker {__file__}')"
    edit = Edit("drop_raise", start, start + len(text.encode()), text, after, 0, 0)
    return Mutant("M3", PACKAGE, "__init__.py", edit)


@pytest.fixture(scope="module")
def results():
    before = _digest(ROOT)
    mutants = [
        # A scalar with dimensions is no longer refused (V3.scalar_rank): the validation target sees it at once.
        _mutant("M1", "validation/operands.py", 'raise invalid(f"{what} is a {type_name(t)} scalar but', "drop_raise"),
        # The LiteRT backend is never reached by the numpy driver spec: equivalent for it, so it must survive.
        _mutant("M2", "backends/litert/_program.py", 'raise ValueError(f"main takes', "drop_raise"),
        _start_marker(),
    ]
    out = run_mutants(mutants, Config(ROOT, ["validation"], budget_s=3.0, timeout_s=5.0, jobs=2))
    return {r.mutant.id: r for r in out}, before


def test_a_mutant_the_validation_target_tells_apart_is_killed_with_its_rule(results) -> None:
    r = results[0]["M1"]
    assert r.status == KILLED and r.killed
    assert r.target == "validation" and r.rule
    assert 0 < r.seconds < 3.0 and r.false_alarms == 0


def test_a_mutant_no_case_reaches_survives_its_budget(results) -> None:
    r = results[0]["M2"]
    assert r.status == SURVIVED and not r.killed
    assert r.seconds is None and r.cases > 0
    assert r.diff.startswith(f"--- a/{PACKAGE}/backends/litert/_program.py")


def test_the_worker_runs_the_mutated_copy_and_a_driver_that_cannot_start_is_killed_at_start(results) -> None:
    r = results[0]["M3"]
    assert r.status == KILLED_AT_START and r.killed
    assert "mutant marker" in r.detail and "nnfuzz-mutant-" in r.detail
    assert r.detail.endswith(f"{PACKAGE}/__init__.py")


def test_the_original_tree_is_untouched(results) -> None:
    assert _digest(ROOT) == results[1]


def test_the_summary_counts_and_scores(results) -> None:
    s = summary(list(results[0].values()), wall_s=12.0)
    assert (s["mutants"], s["killed"], s["killed_at_start"], s["survived"], s["errors"]) == (3, 1, 1, 1, 0)
    assert s["score"] == round(2 / 3, 4) and s["score_past_start"] == 0.5
    assert s["median_seconds_to_kill"] == round(results[0]["M1"].seconds, 3)
