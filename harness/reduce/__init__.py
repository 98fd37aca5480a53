"""Graph reduction: shrinking a failing case's model while it keeps failing the same way.

For cases whose model executes (a model and a request: the execution and request targets, cache and burst cases
alike). `candidates(case)` gives every smaller case one edit away, each complete (model, inputs, request) and
accepted by the reference validator and executor: operations isolated, cut (their results become model inputs
holding the reference's values) or dropped with everything after them, unused parts removed, dimensions shrunk,
values and quantization parameters simplified. `reduce_graph(case, still_fails)` keeps the first candidate that
still fails, tier by tier (request, operations, structure, dimensions, values), until none does: it ends at the fewest
operations the candidates reach. The caller's predicate decides what "still fails" means (the same verdict
signature, in an isolated worker).
"""

from harness.reduce._candidates import KINDS, TIERS, Candidate, candidates
from harness.reduce._loop import DEFAULT_MAX_RUNS, GraphReduction, reduce_graph
from harness.reduce._state import count_elements, reducible

__all__ = [
    "DEFAULT_MAX_RUNS",
    "KINDS",
    "TIERS",
    "Candidate",
    "GraphReduction",
    "candidates",
    "count_elements",
    "reduce_graph",
    "reducible",
]
