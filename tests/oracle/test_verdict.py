"""Verdicts: signatures that keep distinct bugs apart, and their JSON form."""

from __future__ import annotations

from harness.oracle.rules import Breach, verdict_of
from harness.oracle.verdict import Outcome, Verdict
from harness.runner.execute import verdict_from_json


def _accuracy(locus: str, frames: tuple[str, ...] = ()) -> Verdict:
    return Verdict(Outcome.FAILURE, rule="accuracy.float32", title="sync: output 0 differs", frames=frames, locus=locus)


def test_wrong_values_written_by_different_operations_have_different_signatures() -> None:
    assert _accuracy("TANH").signature != _accuracy("CONV_2D").signature
    assert _accuracy("TANH").signature == _accuracy("TANH").signature
    # Details and titles vary from case to case; they never split a bug.
    assert _accuracy("TANH").signature == Verdict(
        Outcome.FAILURE, rule="accuracy.float32", title="async: output 3 differs", details="x", locus="TANH"
    ).signature


def test_frames_name_a_bug_better_than_a_locus_and_no_locus_keeps_the_old_key() -> None:
    frames = ("driver_under_test/backends/numpy/kernels/activation.py:tanh",)
    assert _accuracy("TANH", frames).signature == _accuracy("CONV_2D", frames).signature
    assert _accuracy("").signature == Verdict(Outcome.FAILURE, rule="accuracy.float32").signature


def test_the_first_findings_locus_reaches_the_verdict_and_survives_json() -> None:
    verdict = verdict_of([Breach("accuracy.quant8", "t", locus="AVERAGE_POOL_2D"), Breach("x", "y")], "execution")
    assert verdict.locus == "AVERAGE_POOL_2D"
    again = verdict_from_json(verdict.to_json())
    assert again.locus == "AVERAGE_POOL_2D" and again.signature == verdict.signature
    assert verdict_from_json({k: v for k, v in verdict.to_json().items() if k != "locus"}).locus == ""
