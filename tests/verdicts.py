"""A failing verdict as a test failure: what broke, the case, and the `nnfuzz repro` command that replays the case.

Every test that runs a case on the fault-free driver and expects it to pass asserts it with `assert_passes`. A
failing case is written to .hypothesis/failing-cases/ (ignored by git, next to Hypothesis's own database) as case
JSON, and the failure message ends with "Reproduce with: nnfuzz repro FILE --target TARGET".
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import event
from hypothesis.control import currently_in_test_context

from harness.case import Case
from harness.case.files import dump_case
from harness.oracle.verdict import Verdict
from harness.runner.replay import repro_command

FAILING_CASES = Path(__file__).resolve().parents[1] / ".hypothesis" / "failing-cases"
_CASE_TEXT_LIMIT = 6000
_CASE_KEYS = ("expect", "execution", "model", "request", "inputs", "extras")


def explain(verdict: Verdict, case: Case) -> str:
    """The verdict, then the case that produced it (cut short when long: the saved file holds all of it)."""
    d = case.to_json()
    text = "\n".join(f"  {key}: {json.dumps(d[key], separators=(',', ':'))}" for key in _CASE_KEYS if d.get(key))
    if len(text) > _CASE_TEXT_LIMIT:
        text = text[:_CASE_TEXT_LIMIT] + "\n... (case truncated)"
    where = f" on {verdict.extras['path']}" if "path" in verdict.extras else ""
    return f"{verdict.outcome.value} [{verdict.rule}]{where}: {verdict.title}\n{verdict.details}\ncase:\n{text}"


def save_failing_case(verdict: Verdict, case: Case) -> Path:
    """The case written where `nnfuzz repro` can replay it, named by its target and the verdict's signature."""
    # One file per signature: Hypothesis replays its smallest failing example last, so that is the one kept.
    path = FAILING_CASES / f"{case.target}-{verdict.signature}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    dump_case(case.to_json(), path)
    return path


def assert_passes(verdict: Verdict, case: Case) -> None:
    """Fail the test unless the verdict is SUCCESS or a registered known divergence of an engine (counted in the
    test's statistics), explaining it and ending with the command that reproduces it."""
    if verdict.ok:
        return
    if "divergence" in verdict.extras:
        if currently_in_test_context():
            event(f"known divergence {verdict.extras['divergence']}")
        return
    command = repro_command(save_failing_case(verdict, case), case.target)
    raise AssertionError(f"{explain(verdict, case)}\nReproduce with: {command}")
