"""A draft: one edit of a case's graph, before the reference has checked it (harness.reduce._state.finish)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.reduce._graph import Graph


@dataclass
class Draft:
    """An edited graph and what the edit was."""

    kind: str  # the candidate kind (harness.reduce.KINDS)
    what: str  # the edit, for a person: "isolate operation 3 (ADD)"
    graph: Graph  # compacted
    reshape: bool = False  # the results' dimensions must be recomputed
    plain: bool | None = None  # the request layout to use (None: the case's own)
    gain: int = 0  # elements the edit removes (orders the dimension candidates)
