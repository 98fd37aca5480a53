"""The request target's huge cases (D26): drawn, passing on the bundled driver, and judged by their statuses."""

from __future__ import annotations

from types import SimpleNamespace

from harness.drivers import create_device
from harness.gen.sources import RandomSource
from harness.hal import ErrorStatus, OutputShape
from harness.targets import get_target
from harness.targets._limits import _judge_outcome


def test_huge_cases_are_drawn_and_pass_on_the_bundled_driver() -> None:
    target, device = get_target("request"), create_device()
    judged = 0
    for seed in range(200):
        case = target.decode(RandomSource(seed))
        try:
            if case.expect.get("kind") != "huge":
                continue
            verdict = target.run(case, device)
            assert verdict.ok, (seed, verdict.rule, verdict.title)
            judged += 1
        finally:
            case.close()
    assert judged >= 15


def _outcome(status: ErrorStatus, shapes: list[OutputShape] | None = None) -> SimpleNamespace:
    return SimpleNamespace(status=status, output_shapes=shapes or [])


def test_a_refusal_by_size_passes_and_a_success_does_not() -> None:
    expected = [16384, 16384]
    for status in (ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT, ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT,
                   ErrorStatus.GENERAL_FAILURE):  # fmt: skip
        assert _judge_outcome("sync", _outcome(status), expected) is None
    for status in (ErrorStatus.NONE, ErrorStatus.INVALID_ARGUMENT):
        assert _judge_outcome("sync", _outcome(status), expected).rule == "limits.refused_or_run"


def test_running_it_must_report_the_output_too_small_with_its_real_dimensions() -> None:
    expected = [16384, 16384]
    insufficient = ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert _judge_outcome("sync", _outcome(insufficient, [OutputShape(expected, False)]), expected) is None
    assert _judge_outcome("sync", _outcome(insufficient, [OutputShape([], False)]), expected) is None
    assert _judge_outcome("sync", _outcome(insufficient, [OutputShape([16384, 1], False)]), expected) is not None
    assert _judge_outcome("sync", _outcome(insufficient, [OutputShape(expected, True)]), expected) is not None
