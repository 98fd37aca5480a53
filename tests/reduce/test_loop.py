"""The reduction loop: a planted bug in one operation ends at that operation alone, one that needs two operations at
those two, with the same verdict signature throughout; a broken request is kept broken; the budget is honoured."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

import driver_under_test
from harness.case import Case
from harness.gen.model import ModelConfig
from harness.gen.sources import RandomSource
from harness.hal import Device
from harness.hal import OperationType as T
from harness.reduce import reduce_graph
from harness.reference import validate_request
from harness.runner import resolve_target
from harness.targets.execution import ExecutionTarget
from tests.reduce.fakes import CorruptsOperation
from tests.reduce.planted import broadcast_case

OPERATIONS = frozenset({T.ADD, T.MUL, T.SUB, T.RELU, T.TANH, T.LOGISTIC, T.ABS, T.NEG, T.MAXIMUM, T.MINIMUM})
# Five operations, the synchronous path only (the one the corrupting device gets wrong).
TARGET = ExecutionTarget(
    model_config=ModelConfig(max_operations=5, control_flow=False, operations=OPERATIONS), paths=("sync",)
)


def failing_the_same_way(target: object, device: Device, signature: str) -> Callable[[dict], bool]:
    """The predicate a caller gives: the case fails with this signature (here in-process, not isolated)."""

    def still_fails(case_json: dict) -> bool:
        case = Case.from_json(case_json)
        try:
            return target.run(case, device).signature == signature  # type: ignore[attr-defined]
        finally:
            case.close()

    return still_fails


def five_operation_finding(device: Device, reads: int | None = None) -> tuple[dict, str]:
    """The first generated five-operation case whose first wrong output ADD writes (one reading a MUL result, with
    `reads`): its JSON and its verdict's signature."""
    for seed in range(4000):  # five operations with ADD reading a MUL result are a few in a thousand
        case = TARGET.decode(RandomSource(seed))
        try:
            case_json = case.to_json()
            operations = case_json["model"]["operations"]
            if len(operations) != 5 or (reads is not None and not _add_reads_mul(case_json["model"])):
                continue
            verdict = TARGET.run(case, device)
        finally:
            case.close()
        if not verdict.ok and verdict.locus == "ADD":
            return case_json, verdict.signature
    raise AssertionError("no generated five-operation case shows the planted bug")


def _add_reads_mul(model: dict) -> bool:
    written_by_mul = {k for op in model["operations"] if op["type"] == "MUL" for k in op["outputs"]}
    return any(op["type"] == "ADD" and written_by_mul.intersection(op["inputs"]) for op in model["operations"])


def test_a_bug_in_one_operation_of_five_ends_at_that_operation_with_the_same_signature() -> None:
    device = CorruptsOperation(driver_under_test.create_device(), T.ADD)
    case, signature = five_operation_finding(device)
    still_fails = failing_the_same_way(TARGET, device, signature)
    reduction = reduce_graph(case, still_fails, deadline=time.monotonic() + 120)
    assert reduction.stopped == "done"
    assert [op["type"] for op in reduction.case["model"]["operations"]] == ["ADD"]
    assert reduction.operations == (5, 1) and reduction.elements[1] < reduction.elements[0]
    assert still_fails(reduction.case)
    assert any(step.startswith("operations/") for step in reduction.steps)
    assert reduction.accepted == len(reduction.steps) <= reduction.runs


def test_a_bug_that_needs_two_operations_stays_at_those_two() -> None:
    # ADD is wrong only where it reads a MUL result (a faulty fusion): neither operation fails alone.
    device = CorruptsOperation(driver_under_test.create_device(), T.ADD, after=T.MUL)
    case, signature = five_operation_finding(device, reads=T.MUL)
    still_fails = failing_the_same_way(TARGET, device, signature)
    reduction = reduce_graph(case, still_fails, deadline=time.monotonic() + 120)
    assert reduction.stopped == "done"
    assert [op["type"] for op in reduction.case["model"]["operations"]] == ["MUL", "ADD"]
    assert _add_reads_mul(reduction.case["model"]) and still_fails(reduction.case)
    assert reduction.operations == (5, 2)


def test_a_driver_fault_in_one_operation_of_a_hand_made_model_ends_at_it() -> None:
    execution = resolve_target("execution")
    device = driver_under_test.create_device(faults=["broadcast_wrong_axis"])
    case = broadcast_case()
    original = Case.from_json(case)
    verdict = execution.run(original, device)
    original.close()
    assert not verdict.ok and verdict.locus == "ADD"
    reduction = reduce_graph(case, failing_the_same_way(execution, device, verdict.signature))
    model = reduction.case["model"]
    assert [op["type"] for op in model["operations"]] == ["ADD"]
    # The [3, 1] addend stays (the bug is in how it broadcasts), with one non-zero element; the input is zeros.
    addend = next(o for o in model["operands"] if o["dimensions"] == [3, 1])
    assert sorted(addend["value"]) == [0.0, 0.0, 3.0]
    assert reduction.case["inputs"][0]["value"] == [0.0] * 9
    # The request is in the plain layout, one output buffer the size of the one output.
    assert [a["length"] for a in reduction.case["request"]["outputs"]] == [36]


def test_a_broken_request_stays_broken_the_same_way_while_the_model_shrinks() -> None:
    # The request target: an output that ends one byte past its pool, which a faulty bounds check accepts.
    target = resolve_target("request")
    device = driver_under_test.create_device(faults=["pool_bounds_off_by_one"])
    case = {**broadcast_case(), "target": "request", "expect": {"valid": False, "kind": "request", "rule": "V31"}}
    case["request"]["pools"][1]["size"] = 115  # output 2: offset 80 + length 36 = 116
    original = Case.from_json(case)
    verdict = target.run(original, device)
    original.close()
    assert not verdict.ok
    reduction = reduce_graph(case, failing_the_same_way(target, device, verdict.signature))
    assert [op["type"] for op in reduction.case["model"]["operations"]] == ["ABS"]
    reduced = Case.from_json(reduction.case)
    try:
        live = reduced.materialized()
        assert [v.rule for v in validate_request(live.model, live.request.request)] == ["request.pool.bounds"]
    finally:
        reduced.close()


def test_the_budget_of_runs_and_of_time_is_honoured() -> None:
    case = broadcast_case()
    calls: list[dict] = []

    def always(candidate: dict) -> bool:
        calls.append(candidate)
        return True

    reduction = reduce_graph(case, always, max_runs=3)
    assert reduction.runs == len(calls) == 3 and reduction.stopped == "budget"
    assert reduction.case == calls[-1]

    calls.clear()
    reduction = reduce_graph(case, always, deadline=time.monotonic() - 1)
    assert reduction.runs == 0 and calls == [] and reduction.case == case and reduction.stopped == "budget"

    def slow(candidate: dict) -> bool:
        time.sleep(0.2)
        return False

    started = time.monotonic()
    reduction = reduce_graph(case, slow, deadline=started + 0.5)
    assert reduction.stopped == "budget" and 1 <= reduction.runs <= 4
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize("change", [{"request": None}, {"model": {"operations": []}}])
def test_a_case_that_does_not_execute_comes_back_as_it_is(change: dict) -> None:
    case = {**broadcast_case(), **change}
    reduction = reduce_graph(case, lambda c: True)
    assert reduction.case == case and reduction.runs == 0 and reduction.stopped == "not reducible"
