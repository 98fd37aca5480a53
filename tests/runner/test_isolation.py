"""Isolated runs: every way a case can end is classified, and the harness survives crashes and hangs."""

from __future__ import annotations

import pytest

from harness.oracle.verdict import DRIVER_ANSWERS, DRIVER_SURVIVES, Outcome
from harness.runner import UnknownTarget, WorkerPool, WorkerStartError, run_isolated
from harness.runner.execute import TARGET_RAISES_NOTHING
from tests.runner.toy_targets import ADD_MODEL, MODEL_ACCEPTED, TOY_RULE, toy_case

TOY = "tests.runner.toy_targets:TOY"
PREPARE = "tests.runner.toy_targets:PREPARE"
PREPARE_CASE = {"target": "toy_prepare", "model": ADD_MODEL}
BAD = "tests.runner.bad_drivers:"


def test_an_abort_in_prepare_model_is_a_crash_named_by_its_signal() -> None:
    result = run_isolated(PREPARE, PREPARE_CASE, BAD + "crashing_device", timeout_s=20)
    assert result.verdict.outcome == Outcome.CRASH
    assert result.verdict.rule == DRIVER_SURVIVES
    assert result.verdict.extras["signal"] == "SIGABRT"
    # faulthandler's stack points at the driver's code, and the signature is built from it.
    assert result.verdict.frames[:2] == (
        "tests/runner/bad_drivers.py:_abort",
        "tests/runner/bad_drivers.py:prepare_model",
    )
    assert "Fatal Python error: Aborted" in result.traceback_text


def test_an_endless_loop_in_prepare_model_is_a_hang_and_the_worker_is_killed() -> None:
    with WorkerPool(BAD + "hanging_device", timeout_s=1.0) as pool:
        result = pool.run(PREPARE, PREPARE_CASE)
        first_pid = pool.pid
    assert result.verdict.outcome == Outcome.HANG
    assert result.verdict.rule == DRIVER_ANSWERS
    assert result.verdict.frames[0] == "tests/runner/bad_drivers.py:_spin"
    assert 1.0 <= result.elapsed < 10
    assert first_pid is None  # the hung worker is gone


def test_the_pool_keeps_its_worker_between_cases_and_replaces_it_after_crash_and_hang() -> None:
    with WorkerPool(BAD + "toy_device", timeout_s=1.0) as pool:
        outcomes = []
        pids = []
        for action in ["ok", "ok", "abort", "ok", "loop", "ok", "violate", "raise", "ok"]:
            outcomes.append(pool.run(TOY, toy_case(action)).verdict.outcome)
            pids.append(pool.pid)
        starts = pool.starts
    S, F, H, C = Outcome.SUCCESS, Outcome.FAILURE, Outcome.HANG, Outcome.CRASH
    assert outcomes == [S, S, C, S, H, S, F, F, S]
    # One worker until the abort, a second until the loop, a third to the end.
    assert pids[0] == pids[1] and pids[2] is None
    assert pids[3] not in (None, pids[0]) and pids[4] is None
    assert pids[5] == pids[6] == pids[7] == pids[8] and pids[5] not in (None, pids[0], pids[3])
    assert starts == 3


def test_a_rule_violation_keeps_its_verdict_and_an_escaping_exception_is_a_harness_error() -> None:
    with WorkerPool(BAD + "toy_device", timeout_s=5.0) as pool:
        violated = pool.run(TOY, toy_case("violate"))
        raised = pool.run(TOY, toy_case("raise"))
    assert (violated.verdict.outcome, violated.verdict.rule) == (Outcome.FAILURE, TOY_RULE)
    assert "RuleViolation" in violated.traceback_text
    assert (raised.verdict.outcome, raised.verdict.rule) == (Outcome.FAILURE, TARGET_RAISES_NOTHING)
    assert raised.verdict.title == "KeyError escaped the toy target's run (a harness error)"
    assert raised.verdict.frames == ("tests/runner/toy_targets.py:run",)
    assert raised.verdict.target == "toy"


def test_a_generator_bug_is_a_harness_error_in_single_runs_and_in_batches() -> None:
    broken = "tests.runner.toy_targets:BROKEN"
    with WorkerPool(BAD + "toy_device", timeout_s=5.0) as pool:
        single = pool.run(broken, b"\x00")
        batch = pool.run_random([broken], first_seed=0, count=5, seconds=10)
        starts = pool.starts
    assert (single.verdict.rule, single.verdict.title) == (
        TARGET_RAISES_NOTHING,
        "KeyError escaped the toy_broken target's decode (a harness error)",
    )
    assert "toy_targets.py" in single.traceback_text
    assert batch.failed.verdict.rule == TARGET_RAISES_NOTHING and batch.failed.case is None
    assert starts == 1  # the worker survived both


def test_a_verdict_from_the_target_comes_back_with_the_case_that_ran() -> None:
    result = run_isolated(PREPARE, PREPARE_CASE, BAD + "toy_device", faults=["reject_everything"], timeout_s=20)
    assert (result.verdict.outcome, result.verdict.rule) == (Outcome.FAILURE, MODEL_ACCEPTED)
    assert result.case["model"] == PREPARE_CASE["model"]


def test_a_factory_that_fails_is_a_start_error_not_a_verdict() -> None:
    with pytest.raises(WorkerStartError, match="no such hardware"):
        run_isolated(TOY, toy_case("ok"), BAD + "failing_factory", timeout_s=5)


def test_an_unknown_target_is_refused_before_any_worker_starts() -> None:
    pool = WorkerPool(BAD + "toy_device")
    with pytest.raises(UnknownTarget):
        pool.run("no_such_target", toy_case("ok"))
    assert pool.starts == 0


def test_the_validation_target_on_the_bad_drivers_ends_in_crash_then_hang_and_the_pool_goes_on() -> None:
    import harness.targets  # noqa: F401 - registers the targets
    from harness.runner import decode_seed
    from harness.targets.base import TARGETS

    validation = TARGETS["validation"]
    case = next(c for s in range(200) if (c := decode_seed(validation, s)) is not None and c.expect.get("valid"))
    crashed = run_isolated("validation", case, BAD + "crashing_device", timeout_s=20)
    with WorkerPool(BAD + "hanging_device", timeout_s=1.0) as pool:
        hung = pool.run("validation", case)
        again = pool.run("validation", case)
    assert (crashed.verdict.outcome, crashed.verdict.extras["signal"]) == (Outcome.CRASH, "SIGABRT")
    assert "tests/runner/bad_drivers.py:prepare_model" in crashed.verdict.frames
    assert hung.verdict.outcome == again.verdict.outcome == Outcome.HANG
    assert hung.verdict.signature == again.verdict.signature  # the same bug, the same key
