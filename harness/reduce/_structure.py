"""Candidates that remove operations or parts of the graph.

- isolate: keep one operation, or one operation and another that reads its result; what they read from the
  operations removed becomes model inputs (or constants) holding the values the reference computed, what they write
  that the removed operations read becomes model outputs;
- tail: make an intermediate result a model output and drop every operation that depends on it (and, at compaction,
  every operation that only fed what is dropped);
- cut: remove one operation; its results become model inputs (or constants) holding the values the reference
  computed, so the operations after it see the same values (what only fed it goes at compaction);
- keep_output / drop_output: keep one model output, or drop one (and the operations only it needed);
- tidy: only the compaction: unused operands, inputs no operation reads, referenced subgraphs no longer used.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.reduce._draft import Draft
from harness.reduce._graph import Graph, operation_type_name
from harness.reduce._state import State


def structure_drafts(state: State) -> list[Draft]:
    """Every structural edit of the state's graph, in generation order (isolations first)."""
    base = state.graph()
    operations = base.operations
    producers, readers = base.producers(), base.readers()
    drafts: list[Draft] = []
    n = len(operations)
    if n > 1:
        for p in range(n):
            drafts += _isolated(state, base, [p])
        pairs = {(producers[k], q) for q, op in enumerate(operations) for k in op["inputs"] if k in producers}
        if n > 2:
            for pair in sorted(pairs):
                drafts += _isolated(state, base, pair)
    for k in sorted(set(readers) & set(producers)):
        drafts.append(_tail(base, k))
    for p, op in enumerate(operations):
        if any(k in readers for k in op["outputs"]):
            drafts += _cut(state, base, p)
    outputs = base.outputs
    if len(outputs) > 1:
        for j, k in enumerate(outputs):
            keep = base.copy()
            keep.outputs = [k]
            drafts.append(Draft("keep_output", f"keep only model output {j} (operand {k})", keep.compact()))
            drop = base.copy()
            drop.outputs = [o for o in outputs if o != k]
            drafts.append(Draft("drop_output", f"drop model output {j} (operand {k})", drop.compact()))
    drafts.append(Draft("tidy", "remove unused operands, inputs and subgraphs", base.copy().compact()))
    return drafts


def _names(graph: Graph, positions: Iterable[int]) -> str:
    return ", ".join(f"{p} ({operation_type_name(graph.operations[p])})" for p in positions)


def _isolated(state: State, base: Graph, keep: Iterable[int]) -> list[Draft]:
    """The operations `keep` alone: as model inputs, then as constants, what they read of the others."""
    keep = sorted(set(keep))
    drafts = []
    for as_constant in (False, True):
        g = base.copy()
        producers, readers = g.producers(), g.readers()
        for p in keep:
            for k in g.operations[p]["inputs"]:
                if k in producers and producers[k] not in keep and not _converted(g, state, k, as_constant):
                    return drafts
        outputs = [k for k in g.outputs if producers.get(k) in keep]
        for p in keep:
            for k in g.operations[p]["outputs"]:
                if k not in outputs and any(r not in keep for r in readers.get(k, [])):
                    outputs.append(k)
        g.outputs = outputs
        g.remove(p for p in range(len(g.operations)) if p not in keep)
        how = "constants" if as_constant else "model inputs"
        kind = "isolate_constant" if as_constant else "isolate"
        drafts.append(Draft(kind, f"keep only operation {_names(base, keep)}, what it reads as {how}", g.compact()))
    return drafts


def _converted(graph: Graph, state: State, k: int, as_constant: bool) -> bool:
    """Operand k becomes a model input (or a constant) holding its reference value; False if it has none."""
    value = state.values.get(k)
    if value is None:
        return False
    if as_constant:
        graph.to_constant(k, value)
    else:
        graph.to_input(k, value)
    return True


def _tail(base: Graph, k: int) -> Draft:
    g = base.copy()
    g.remove(g.downstream([k]))
    g.to_output(k)
    return Draft("tail", f"make operand {k} a model output, dropping the operations after it", g.compact())


def _cut(state: State, base: Graph, p: int) -> list[Draft]:
    drafts = []
    for as_constant in (False, True):
        g = base.copy()
        readers = g.readers()
        for k in g.operations[p]["outputs"]:
            if readers.get(k) and not _converted(g, state, k, as_constant):
                return drafts
        g.remove([p])
        how = "constants" if as_constant else "model inputs"
        kind = "cut_constant" if as_constant else "cut"
        drafts.append(Draft(kind, f"cut operation {_names(base, [p])}, its results as {how}", g.compact()))
    return drafts
