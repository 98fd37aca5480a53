"""Candidates that shrink dimensions: a model input's axis (alone, or with every constant axis of the same size, the
constants tied to it), every axis of one size at once, a constant's axis. An axis of size n becomes 1 or n // 2, its
values the first ones along it; the results' declared dimensions are recomputed (harness.reduce._state.finish), and
the model is offered only if the reference validator and the reference still take it.
"""

from __future__ import annotations

import numpy as np

from harness.reduce._draft import Draft
from harness.reduce._graph import Graph, is_tensor
from harness.reduce._state import State

Axis = tuple[int, int]  # (operand index, axis)


def shape_drafts(state: State) -> list[Draft]:
    """Every dimension shrink of the state's model inputs and constants, those removing the most elements first."""
    base = state.graph()
    tensors = {k: v for k, v in state.data().items() if v.ndim > 0 and v.size > 1}
    inputs = {k: v for k, v in tensors.items() if k in base.inputs}
    constants = {k: v for k, v in tensors.items() if k not in base.inputs}
    drafts: list[Draft] = []
    seen: set[tuple] = set()

    def add(what: str, axes: list[Axis], m: int) -> None:
        key = (tuple(sorted(axes)), m)
        if axes and key not in seen:
            seen.add(key)
            drafts.append(_shrunk(base, tensors, axes, m, what))

    sizes = sorted({n for v in tensors.values() for n in v.shape if n > 1}, reverse=True)
    for n in sizes:
        for m in _smaller(n):
            axes = [(k, a) for k, v in tensors.items() for a, d in enumerate(v.shape) if d == n]
            add(f"every dimension of size {n} -> {m}", axes, m)
    for k, v in inputs.items():
        for a, n in enumerate(v.shape):
            for m in _smaller(n):
                add(f"input operand {k} axis {a}: {n} -> {m}", [(k, a)], m)
                tied = [(c, b) for c, w in constants.items() for b, d in enumerate(w.shape) if d == n]
                add(f"input operand {k} axis {a} and the constant axes of size {n}: -> {m}", [(k, a), *tied], m)
    for k, v in constants.items():
        for a, n in enumerate(v.shape):
            if n > 1:
                add(f"constant operand {k} axis {a}: {n} -> 1", [(k, a)], 1)
    drafts.sort(key=lambda d: -d.gain)
    return drafts


def _smaller(n: int) -> list[int]:
    """The sizes an axis of size n is tried at: 1, then half."""
    return [m for m in dict.fromkeys((1, n // 2)) if 1 <= m < n]


def _shrunk(base: Graph, tensors: dict[int, np.ndarray], axes: list[Axis], m: int, what: str) -> Draft:
    g = base.copy()
    arrays: dict[int, np.ndarray] = {}
    for k, a in axes:
        arrays[k] = np.take(arrays.get(k, tensors[k]), np.arange(m), axis=a)
    gain = 0
    for k, value in arrays.items():
        operand = g.operands[k]
        gain += tensors[k].size - value.size
        if k in g.inputs:
            g.values[k] = value
            declared = operand.get("dimensions", [])
            if len(declared) == value.ndim:
                operand["dimensions"] = [int(s) if d else 0 for d, s in zip(declared, value.shape)]
        elif is_tensor(operand):
            g.set_constant(k, value)
            quant = operand.get("channelQuant")
            if quant is not None:
                channels = value.shape[int(quant.get("channelDim", 0))]
                quant["scales"] = list(quant.get("scales", []))[:channels]
    return Draft("shrink", what, g.compact(), reshape=True, gain=gain)
