"""The burst and burst_packets targets on the real driver (each burst fault found with its rule, nothing on the
fault-free driver) and on hand-written drivers that break one burst rule each."""

from __future__ import annotations

import json

import pytest

from driver_under_test import create_device
from harness.case import Case
from harness.gen.burst_packets import BurstSessionConfig
from harness.gen.model import ModelConfig
from harness.gen.requests import RequestConfig
from harness.gen.source import GenerationRejected
from harness.gen.sources import BytesSource, RandomSource
from harness.hal import ErrorStatus, OutputShape, Timing
from harness.hal.burst_wire import ResultPacket
from harness.oracle.rules import TIMING_WITHIN_WALL_TIME
from harness.oracle.verdict import Outcome
from harness.targets import run_atheris_one
from harness.targets.burst import BurstTarget
from harness.targets.burst_packets import BurstPacketsTarget, template_packet
from harness.targets.burst_session import BurstModel, judge_error_result, judge_other_result, judge_valid_result
from tests.targets.fakes import DelegatingPreparedModel, WrapsPreparedModel
from tests.verdicts import assert_passes


@pytest.fixture(scope="module")
def clean():
    return create_device(faults=[])


def run_seeds(target, device, seeds: range):
    results = []
    for seed in seeds:
        try:
            case = target.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        results.append((seed, case, target.run(case, device)))
    return results


def test_the_fault_free_driver_passes_burst_sessions(clean) -> None:
    results = run_seeds(BurstTarget(), clean, range(120))
    for _, case, verdict in results:
        assert_passes(verdict, case)
    steps = {step for _, c, _ in results for step in c.expect["steps"]}
    assert steps == {"run", "packet", "renew", "free_unknown", "release"}


def test_the_fault_free_driver_passes_raw_packets(clean) -> None:
    for _, case, verdict in run_seeds(BurstPacketsTarget(), clean, range(400)):
        assert_passes(verdict, case)


# (fault, target, rule, seeds to try)
FAULTS = [
    ("burst_slot_cache_not_invalidated", BurstTarget, "burst.matches_synchronous", 200),
    ("burst_trusts_dimension_count", BurstTarget, "burst.malformed_packet_rejected", 400),
    ("burst_result_padding_not_zeroed", BurstTarget, "burst.result_padding_zeroed", 20),
    ("burst_result_padding_not_zeroed", BurstPacketsTarget, "burst.result_padding_zeroed", 20),
]


@pytest.mark.parametrize(("fault", "make", "rule", "seeds"), FAULTS, ids=[f"{f[0]}-{f[1].__name__}" for f in FAULTS])
def test_each_burst_fault_is_found_with_its_rule(clean, fault, make, rule, seeds) -> None:
    target = make()
    faulty = create_device(faults=[fault])
    for seed, case, verdict in run_seeds(target, faulty, range(seeds)):
        if not verdict.ok:
            assert verdict.rule == rule, (seed, verdict.title)
            assert make().run(case, clean).ok, "the case also fails on the fault-free driver"
            return
    pytest.fail(f"{fault} not found in {seeds} seeds")


def session_case(target: BurstTarget, steps: list[dict], channel: int | None = None, seed: int = 0) -> Case:
    """A decoded case with its session replaced by these steps."""
    case = target.decode(RandomSource(seed))
    case.extras = {"burst": {"resultChannel": channel, "steps": steps}, "reuse": False}
    return case


def test_a_dimension_datum_dropped_from_a_fixed_size_packet_is_refused(clean) -> None:
    target = BurstTarget(fresh_probability=0.0)
    steps = [
        # Argument -1 is the last operand with dimensions: an output, whose dimensions may be left unknown (0).
        {"do": "packet", "mutation": {"op": "drop_dimension", "argument": -1, "fixSize": True}, "measure": False},
        {"do": "run", "measure": False},
    ]
    faulty = create_device(faults=["burst_trusts_dimension_count"])
    for seed in range(40):
        case = session_case(target, steps, seed=seed)
        if not any(a["dimensions"] for a in case.request["outputs"]):
            continue
        assert target.run(case, clean).ok
        verdict = target.run(case, faulty)
        if not verdict.ok:
            assert verdict.rule == "burst.malformed_packet_rejected"
            return
    pytest.fail("no case with dimensions was refused wrongly by the faulty parser")


def test_slots_reused_after_free_memory_must_reach_the_new_memories(clean) -> None:
    target = BurstTarget(fresh_probability=0.0)
    steps = [
        {"do": "run", "measure": False},
        {"do": "renew", "which": "all", "free": True},
        {"do": "run", "measure": False},
    ]
    faulty = create_device(faults=["burst_slot_cache_not_invalidated"])
    verdicts = [target.run(session_case(target, steps, seed=s), faulty) for s in range(10)]
    assert all(target.run(session_case(target, steps, seed=s), clean).ok for s in range(10))
    assert any(v.rule == "burst.matches_synchronous" for v in verdicts)


def test_a_small_result_channel_is_judged_by_the_result_size(clean) -> None:
    target = BurstTarget(fresh_probability=0.0)
    for seed in range(10):
        case = session_case(target, [{"do": "run", "measure": False}], channel=2, seed=seed)
        assert target.run(case, clean).ok


def state_of(clean) -> BurstModel:
    # Outputs of unknown dimensions the request leaves unknown: the result must carry their shapes.
    target = BurstTarget(
        model_config=ModelConfig(max_operations=1, control_flow=False, unknown_dims_probability=1.0),
        request_config=RequestConfig(output_dims_probability=0.0, too_small_probability=0.0),
        fresh_probability=1.0,
    )
    for seed in range(50):
        case = target.decode(RandomSource(seed))
        state = BurstModel.build(case, clean, target.timeout_s)
        if (
            isinstance(state, BurstModel)
            and state.sync.status == ErrorStatus.NONE
            and state.sync.shapes
            and state.fully_specified is None
        ):
            return state
    raise AssertionError("no pooled model whose output shapes must be reported")


NO_TIMING = Timing()


def test_an_error_result_has_no_shapes_and_no_timing() -> None:
    error = ResultPacket(ErrorStatus.GENERAL_FAILURE)
    assert judge_error_result(error, "r", "x") is None
    assert judge_error_result(ResultPacket(ErrorStatus.NONE), "r", "x").rule == "r"
    shaped = ResultPacket(ErrorStatus.GENERAL_FAILURE, [OutputShape([1], True)])
    assert "output shapes" in judge_error_result(shaped, "r", "x").title
    timed = ResultPacket(ErrorStatus.INVALID_ARGUMENT, [], Timing(1, 2))
    assert "timing" in judge_error_result(timed, "r", "x").title


def test_a_result_that_cannot_fit_the_channel_must_be_an_error(clean) -> None:
    state = state_of(clean)
    success = ResultPacket(ErrorStatus.NONE, list(state.sync.shapes), NO_TIMING)
    # The synchronous result needs 2 datums plus one per shape and one per dimension.
    needed = 2 + sum(1 + len(s.dimensions) for s in state.sync.shapes)
    finding = judge_valid_result(state, success, False, needed - 1, "burst.matches_synchronous")
    assert finding.rule == "burst.oversized_result_rejected"
    assert judge_valid_result(state, success, False, needed, "burst.matches_synchronous") is None
    error = ResultPacket(ErrorStatus.GENERAL_FAILURE)
    assert judge_valid_result(state, error, False, 1, "burst.matches_synchronous") is None
    assert judge_valid_result(state, error, False, needed, "burst.matches_synchronous").rule == (
        "burst.matches_synchronous"
    )


class KeepsServingAfterRelease(DelegatingPreparedModel):
    """A prepared model whose bursts ignore release."""

    def configure_execution_burst(self, callback, request_channel, result_channel):
        status, context = self.inner.configure_execution_burst(callback, request_channel, result_channel)

        class IgnoresRelease:
            def free_memory(self, slot):
                context.free_memory(slot)

            def release(self):
                pass

            def real_release(self):
                context.release()

        return status, None if context is None else IgnoresRelease()


def test_a_burst_that_serves_after_release_breaks_the_release_rule(clean) -> None:
    target = BurstTarget(fresh_probability=0.0)
    device = WrapsPreparedModel(clean, KeepsServingAfterRelease)
    case = session_case(target, [{"do": "run", "measure": False}, {"do": "release"}])
    assert target.run(case, clean).ok
    verdict = target.run(case, device)
    assert verdict.outcome == Outcome.FAILURE
    assert verdict.rule == "burst.release_ends_listener"


def test_a_burst_case_replays_from_its_json(clean) -> None:
    case = BurstTarget().decode(RandomSource(7))
    replayed = Case.from_json(json.loads(case.dumps()))
    assert BurstTarget().run(replayed, clean).ok
    assert replayed.extras == case.extras


def test_the_valid_packet_as_raw_bytes_is_the_original_request(clean) -> None:
    target = BurstPacketsTarget()
    case = target.decode(RandomSource(0))
    case.extras["packet"] = template_packet(case.request).hex()
    assert target.run(case, clean).ok


def test_fuzzer_bytes_run_quietly_on_the_fault_free_driver(clean) -> None:
    for target in (BurstTarget(session_config=BurstSessionConfig(max_steps=3)), BurstPacketsTarget()):
        for data in [b"", b"\x00" * 9, bytes(range(256)), b"\xff" * 80]:
            assert run_atheris_one(target, data, clean) is None
    assert BurstPacketsTarget().decode(BytesSource(b"")).extras["packet"]


def test_a_burst_result_timing_longer_than_its_exchange_is_flagged() -> None:
    result = ResultPacket(ErrorStatus.NONE, [], Timing(10, 10**9))
    assert judge_other_result(result, True) is None  # no exchange measured
    assert judge_other_result(result, True, elapsed_ns=50_000).rule == TIMING_WITHIN_WALL_TIME
    assert judge_other_result(ResultPacket(ErrorStatus.NONE, [], Timing(10, 40)), True, elapsed_ns=50_000) is None
