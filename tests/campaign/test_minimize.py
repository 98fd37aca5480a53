"""Structural reduction: the smallest case the predicate still holds for, found greedily; frozen parts untouched; a
case whose model executes reduced as a graph first."""

from __future__ import annotations

import time

from harness.campaign.minimize import reduce_case, reduce_structurally
from tests.reduce.planted import broadcast_case


def test_lists_shrink_to_what_the_failure_needs_and_the_case_kind_is_kept() -> None:
    case = {
        "target": "t",
        "version": 1,
        "expect": {"rule": "V5", "sizes": [1, 2, 3]},
        "model": {"operations": [1, 7, 3, 7, 5], "dimensions": [4, 4]},
    }
    calls = []

    def fails(candidate: dict) -> bool:
        calls.append(candidate)
        return 7 in candidate["model"]["operations"]

    reduction = reduce_case(case, fails, time.monotonic() + 10)
    # One 7 is all the failure needs; the dimensions do not matter; expect/target/version are never touched.
    assert reduction.case == {
        "target": "t",
        "version": 1,
        "expect": {"rule": "V5", "sizes": [1, 2, 3]},
        "model": {"operations": [7], "dimensions": []},
    }
    assert case["model"]["operations"] == [1, 7, 3, 7, 5]  # the input is not modified
    assert reduction.runs == len(calls) and reduction.accepted >= 2


def test_numbers_that_do_not_matter_become_zero() -> None:
    case = {"target": "t", "model": {"values": [3, 5.5], "count": 9, "flag": True}}
    reduction = reduce_case(case, lambda c: len(c["model"]["values"]) == 2, time.monotonic() + 10)
    assert reduction.case == {"target": "t", "model": {"values": [0, 0.0], "count": 0, "flag": True}}


def test_nothing_is_tried_once_the_time_is_up() -> None:
    case = {"target": "t", "model": {"values": [1, 2, 3]}}
    reduction = reduce_case(case, lambda c: True, time.monotonic() - 1)
    assert reduction.case == case and reduction.runs == 0


def test_a_case_whose_model_executes_is_reduced_as_a_graph_first_then_generically() -> None:
    case = broadcast_case()

    # A stand-in for "fails the same way": the model still holds an ADD of a [3, 1] constant.
    def still_fails(candidate: dict) -> bool:
        model = candidate["model"]
        adds = [op for op in model.get("operations", []) if op.get("type") == "ADD"]
        operands = model.get("operands", [])
        return any(
            k < len(operands) and operands[k].get("dimensions") == [3, 1] for op in adds for k in op.get("inputs", [])
        )

    reduction = reduce_structurally(case, still_fails, time.monotonic() + 30)
    assert reduction.graph is not None and reduction.graph.operations == (5, 1)
    assert [op["type"] for op in reduction.case["model"]["operations"]] == ["ADD"]
    assert reduction.runs > reduction.graph.runs and reduction.accepted >= reduction.graph.accepted
    sizes = reduction.sizes()
    assert (sizes["operations_before"], sizes["operations_after"]) == (5, 1)
    assert sizes["elements_after"] < sizes["elements_before"] and sizes["graph_runs"] == reduction.graph.runs


def test_a_case_without_a_model_that_executes_gets_the_generic_reduction_only() -> None:
    case = {"target": "t", "model": {"values": [3, 5.5]}, "request": None}
    reduction = reduce_structurally(case, lambda c: len(c["model"]["values"]) == 2, time.monotonic() + 10)
    assert reduction.graph is None and reduction.sizes() == {}
    assert reduction.case["model"] == {"values": [0, 0.0]}
