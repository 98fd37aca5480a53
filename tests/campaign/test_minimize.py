"""Structural reduction: the smallest case the predicate still holds for, found greedily; frozen parts untouched."""

from __future__ import annotations

import time

from harness.campaign.minimize import reduce_case


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
