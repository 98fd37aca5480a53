"""Seeded random batches in a worker: a failing case stops the batch and names its seed; crashes and hangs too."""

from __future__ import annotations

from harness.gen.sources import BytesSource, RandomSource
from harness.oracle.verdict import Outcome
from harness.runner import WorkerPool, decode_seed
from tests.runner.toy_targets import PREPARE, TOY, TOY_RULE

TOY_REF = "tests.runner.toy_targets:TOY"
PREPARE_REF = "tests.runner.toy_targets:PREPARE"
BAD = "tests.runner.bad_drivers:"


def _first_seed(action: str) -> int:
    """The first seed whose TOY case does `action` (found by decoding, the same way the worker does)."""
    return next(s for s in range(1000) if TOY.decode(RandomSource(s)).extras["action"] == action)


def _bytes_for(action: str) -> bytes:
    return next(bytes([i]) for i in range(256) if TOY.decode(BytesSource(bytes([i]))).extras["action"] == action)


def test_a_batch_of_clean_cases_runs_until_its_count() -> None:
    with WorkerPool(BAD + "toy_device", timeout_s=5) as pool:
        batch = pool.run_random([PREPARE_REF], first_seed=0, count=25, seconds=30)
    assert (batch.attempted, batch.rejected, batch.failed) == (25, 0, None)


def test_a_batch_stops_at_its_first_failing_case_and_names_the_seed_and_case() -> None:
    seed = _first_seed("violate")
    ok_seed = _first_seed("ok")
    with WorkerPool(BAD + "toy_device", timeout_s=5) as pool:
        batch = pool.run_random([TOY_REF], first_seed=seed, count=10, seconds=30)
        clean = pool.run_random([TOY_REF], first_seed=ok_seed, count=1, seconds=30)
    assert batch.attempted == 1
    assert batch.failed.seed == seed and batch.failed.target == "toy"
    assert batch.failed.verdict.rule == TOY_RULE
    assert batch.failed.case["extras"] == {"action": "violate"}
    assert clean.failed is None


def test_a_crash_inside_a_batch_is_charged_to_the_case_that_was_running() -> None:
    seed = _first_seed("abort")
    with WorkerPool(BAD + "toy_device", timeout_s=5) as pool:
        batch = pool.run_random([TOY_REF], first_seed=seed, count=10, seconds=30)
    assert batch.failed.verdict.outcome == Outcome.CRASH
    assert batch.failed.seed == seed
    assert batch.failed.case == decode_seed(TOY, seed).to_json()


def test_a_hang_inside_a_batch_is_reported_and_the_next_batch_runs_in_a_new_worker() -> None:
    with WorkerPool(BAD + "toy_device", faults=["hang_in_prepare"], timeout_s=1.0) as pool:
        batch = pool.run_random([PREPARE_REF], first_seed=7, count=10, seconds=30)
        pool_after = pool.run(TOY_REF, {"target": "toy", "model": {}, "extras": {"action": "ok"}})
        starts = pool.starts
    assert batch.failed.verdict.outcome == Outcome.HANG
    assert (batch.failed.seed, batch.failed.target) == (7, PREPARE.name)
    assert pool_after.verdict.ok and starts == 2


def test_raw_bytes_are_decoded_in_the_worker_as_the_fuzzer_decodes_them() -> None:
    with WorkerPool(BAD + "toy_device", timeout_s=1.0) as pool:
        outcomes = {a: pool.run(TOY_REF, _bytes_for(a)) for a in ("ok", "violate", "abort", "loop")}
    assert {a: r.verdict.outcome for a, r in outcomes.items()} == {
        "ok": Outcome.SUCCESS,
        "violate": Outcome.FAILURE,
        "abort": Outcome.CRASH,
        "loop": Outcome.HANG,
    }
    assert outcomes["violate"].case["extras"] == {"action": "violate"}
