"""Sharing a campaign's budget between its targets: which target the next free worker fuzzes, and for how long.

The budget is wall-clock seconds with `jobs` workers running at once, so there are budget x jobs worker-seconds
to share; each target is owed an equal part. A free worker takes the target owed the most once what running
workers hold is counted, for as long as it is owed (never past the end of the budget). A worker that
stops early (a crash) gives back what it did not use, and its restart takes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MIN_SLICE_S = 5.0  # shorter slices would be mostly start-up


@dataclass(frozen=True)
class Assignment:
    """A worker's job: fuzz `target` for `seconds`."""

    target: str
    seconds: float


def owed(targets: Sequence[str], budget_s: float, jobs: int) -> dict[str, float]:
    """Worker-seconds each target is owed over the whole campaign."""
    share = budget_s * jobs / max(len(targets), 1)
    return {t: share for t in targets}


def next_assignment(
    targets: Sequence[str],
    budget_s: float,
    jobs: int,
    elapsed_s: float,
    spent: Mapping[str, float],
    held: Mapping[str, float],
) -> Assignment | None:
    """The next job for a free worker, or None when the budget is over.

    spent: worker-seconds used by finished workers, per target; held: the worker-seconds running workers will
    have used when they end (their slices, or what they used so far if they overran them).
    """
    wall_left = budget_s - elapsed_s
    if wall_left < 1.0 or not targets:
        return None
    shares = owed(targets, budget_s, jobs)
    available = {t: shares[t] - spent.get(t, 0.0) - held.get(t, 0.0) for t in targets}
    # The most owed first; among equals, the one fewest workers hold (then the listed order).
    target = max(targets, key=lambda t: (round(available[t], 6), -held.get(t, 0.0), -targets.index(t)))
    # Start-up overheads leave every target slightly overdrawn near the end: then the rest goes to the most owed.
    seconds = available[target] if available[target] >= MIN_SLICE_S else wall_left
    return Assignment(target, min(seconds, wall_left))
