"""Sharing the budget: each target is owed budget x jobs / targets worker-seconds; free workers take the most owed."""

from __future__ import annotations

from harness.campaign.schedule import MIN_SLICE_S, Assignment, next_assignment, owed

TARGETS = ["a", "b", "c"]


def test_each_target_is_owed_an_equal_part_of_the_worker_seconds() -> None:
    # 180 s with 2 workers = 360 worker-seconds, 120 each.
    assert owed(TARGETS, 180.0, 2) == {"a": 120.0, "b": 120.0, "c": 120.0}


def test_two_workers_take_two_targets_then_share_the_third_until_the_end() -> None:
    assert next_assignment(TARGETS, 180.0, 2, 0.0, {}, {}) == Assignment("a", 120.0)
    assert next_assignment(TARGETS, 180.0, 2, 0.0, {}, {"a": 120.0}) == Assignment("b", 120.0)
    # Both ended at 122 s (start-up overhead): 58 s of wall clock are left and only c is still owed (120 s).
    spent = {"a": 122.0, "b": 122.0}
    assert next_assignment(TARGETS, 180.0, 2, 122.0, spent, {}) == Assignment("c", 58.0)
    # The second worker joins c: it is still owed 120 - 58 = 62 s, more than a or b (-2 s each).
    assert next_assignment(TARGETS, 180.0, 2, 122.0, spent, {"c": 58.0}) == Assignment("c", 58.0)


def test_a_worker_that_crashed_early_gives_back_what_it_did_not_use() -> None:
    # a ran 10 s of its 60 before a crash: the restart takes a again, for the 50 s it is still owed.
    assert next_assignment(TARGETS, 60.0, 3, 10.0, {"a": 10.0}, {"b": 50.0, "c": 50.0}) == Assignment("a", 50.0)


def test_when_every_target_is_overdrawn_the_rest_of_the_budget_goes_to_the_most_owed() -> None:
    assert 6.0 - 9.0 < MIN_SLICE_S
    assert next_assignment(["a"], 10.0, 1, 6.0, {"a": 9.0}, {}) == Assignment("a", 4.0)


def test_no_assignment_once_the_budget_is_over() -> None:
    assert next_assignment(TARGETS, 180.0, 2, 179.5, {}, {}) is None
    assert next_assignment([], 180.0, 2, 0.0, {}, {}) is None


def test_a_worker_running_past_its_slice_counts_for_what_it_used() -> None:
    # 90 s, 2 workers, 60 s owed each. a is done (62 s used); b's worker still runs at 62 s, past its 60 s slice:
    # it counts for 62 s, so the free worker goes to c, for the 28 s left.
    assert next_assignment(TARGETS, 90.0, 2, 62.0, {"a": 62.0}, {"b": 62.0}) == Assignment("c", 28.0)
