"""The reduction loop: the first candidate that still fails becomes the case, until no candidate does.

Tiers are tried in order (request, operations, structure, dimensions, values) and each tier's candidates with the
ones that remove the most first; after every accepted candidate the loop starts again from the first tier, so it ends
only when no candidate removing an operation still fails: at the fewest operations the candidate kinds can reach
(one, when the failure needs one operation). A candidate already tried is not tried again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.reduce._candidates import case_key, finished, tiers
from harness.reduce._measure import cost
from harness.reduce._state import analyse

DEFAULT_MAX_RUNS = 1000


@dataclass
class GraphReduction:
    """What a graph reduction did: the case it ended at, the runs of the predicate, sizes before and after."""

    case: dict
    runs: int = 0  # calls of the predicate
    accepted: int = 0  # candidates that still failed (each became the case)
    seconds: float = 0.0
    operations: tuple[int, int] = (0, 0)  # (before, after), every subgraph
    elements: tuple[int, int] = (0, 0)  # (before, after), every operand's value
    steps: list[str] = field(default_factory=list)  # each accepted candidate: "tier/kind: what"
    stopped: str = "done"  # done | budget | not reducible

    def summary(self) -> str:
        """One line for a person."""
        return (
            f"graph reduction ({self.stopped}): operations {self.operations[0]} -> {self.operations[1]}, "
            f"elements {self.elements[0]} -> {self.elements[1]}, {self.accepted} of {self.runs} runs accepted "
            f"in {self.seconds:.1f} s"
        )


def reduce_graph(
    case: dict,
    still_fails: Callable[[dict], bool],
    *,
    deadline: float | None = None,
    max_runs: int = DEFAULT_MAX_RUNS,
) -> GraphReduction:
    """The smallest case the candidates reach for which `still_fails` holds, and what it took.

    `case` itself must fail; `still_fails` is called on candidates only (each a new case JSON) and must say whether
    the candidate fails the same way (same class and signature). `deadline` (time.monotonic()) and `max_runs` bound
    the work; a case that is not reducible (no executed model, or one the reference cannot run) comes back as it is.
    """
    started = time.monotonic()
    state = analyse(case)
    if state is None:
        return GraphReduction(case, stopped="not reducible")
    before = (state.operations, state.elements)
    reduction = GraphReduction(case)
    seen = {case_key(case)}
    plain_request = True
    exhausted = False

    def out_of_budget() -> bool:
        nonlocal exhausted
        exhausted = exhausted or reduction.runs >= max_runs or (deadline is not None and time.monotonic() >= deadline)
        return exhausted

    progress = True
    while progress and not out_of_budget():
        progress = False
        below = cost(state)
        for tier, drafts in tiers(state, plain_request=plain_request):
            for draft in drafts:
                if out_of_budget():
                    break
                candidate = finished(state, draft, below)
                if candidate is None or (key := case_key(candidate.case)) in seen:
                    continue
                seen.add(key)
                reduction.runs += 1
                if still_fails(candidate.case):
                    state, progress = candidate, True
                    reduction.accepted += 1
                    reduction.steps.append(f"{tier}/{draft.kind}: {draft.what}")
                    break
                if draft.kind == "plain_request":
                    plain_request = False  # the failure needs the case's own request: keep carrying it
            if progress or out_of_budget():
                break
    reduction.case = state.case
    reduction.stopped = "budget" if exhausted else "done"
    reduction.operations = (before[0], state.operations)
    reduction.elements = (before[1], state.elements)
    reduction.seconds = time.monotonic() - started
    return reduction
