"""The candidates of a case, tier by tier: request, operations, structure, dimensions, values.

Each tier's drafts (harness.reduce._structure, _shapes, _values) are ordered so that those removing the most come
first; `finish` turns a draft into a complete case only when it is reached, so that a loop that accepts an early
candidate pays nothing for the others.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from harness.reduce._draft import Draft
from harness.reduce._graph import count_operations
from harness.reduce._measure import Cost, cost
from harness.reduce._shapes import shape_drafts
from harness.reduce._state import State, analyse, finish
from harness.reduce._structure import structure_drafts
from harness.reduce._values import value_drafts

# The tiers, in the order they are tried: the plain request layout (one candidate, which decides how every later
# candidate lays its request out), fewer operations, fewer operands, smaller dimensions, simpler values.
TIERS = ("request", "operations", "structure", "dimensions", "values")

# Every candidate kind, by tier.
KINDS: dict[str, tuple[str, ...]] = {
    "request": ("plain_request",),
    "operations": ("isolate", "isolate_constant", "tail", "cut", "cut_constant", "keep_output", "drop_output"),
    "structure": ("keep_output", "drop_output", "tail", "tidy"),
    "dimensions": ("shrink",),
    "values": ("zeros", "ones", "single", "scale", "zero_point", "channel_scales", "relaxed"),
}


@dataclass(frozen=True)
class Candidate:
    """A complete case JSON made from another by one edit, which the reference validator and executor accept."""

    kind: str  # one of KINDS[tier]
    tier: str
    what: str  # the edit, for a person
    case: dict
    operations: int  # of every subgraph
    elements: int  # of every operand's value (harness.reduce.count_elements)


def case_key(case: dict) -> str:
    """A case JSON as one comparable string."""
    return json.dumps(case, sort_keys=True)


def tiers(state: State, *, plain_request: bool = True) -> Iterator[tuple[str, list[Draft]]]:
    """(tier, its drafts in order) for each tier; each tier's drafts are made only when it is reached.

    `plain_request`: offer the case with its request in the plain layout (when it is not already).
    """
    if plain_request and not state.plain:
        yield (
            "request",
            [Draft("plain_request", "the request in the plain layout", state.graph().compact(), plain=True)],
        )
    operations, structure = [], []
    before = state.operations, len(state.model.get("operands", []))
    for draft in structure_drafts(state):
        after = count_operations(draft.graph.model), len(draft.graph.operands)
        if after[0] < before[0]:
            operations.append(draft)
        elif after[1] < before[1] or len(draft.graph.outputs) < len(state.model.get("outputIndexes", [])):
            structure.append(draft)
    operations.sort(key=lambda d: (count_operations(d.graph.model), len(d.graph.operands)))
    yield "operations", operations
    yield "structure", structure
    yield "dimensions", shape_drafts(state)
    yield "values", value_drafts(state)


def finished(state: State, draft: Draft, below: Cost) -> State | None:
    """The state of the candidate a draft makes; None when the reference refuses it or it is not below `below` (the
    state's cost: every accepted candidate goes down the order of harness.reduce._measure, so no reduction cycles)."""
    result = finish(state, draft.graph, reshape=draft.reshape, plain=draft.plain)
    if result is None or cost(result) >= below:
        return None
    return result


def candidates(case: dict) -> Iterator[Candidate]:
    """Every candidate of a case (none when it is not reducible), tier by tier, each tier's first the ones that
    remove the most; duplicates and candidates equal to the case are left out."""
    state = analyse(case)
    if state is None:
        return
    seen, below = {case_key(case)}, cost(state)
    for tier, drafts in tiers(state):
        for draft in drafts:
            result = finished(state, draft, below)
            if result is None or (key := case_key(result.case)) in seen:
                continue
            seen.add(key)
            kind, what = draft.kind, draft.what
            yield Candidate(kind, tier, what, result.case, result.operations, result.elements)
