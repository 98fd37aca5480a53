"""Candidates that simplify quantization parameters and values (in that order: zero points first, so that a
zero is the one the parameters end at).

Values of the model inputs and constant tensors: all zeros, all ones, a single non-trivial element (the largest in
magnitude kept, the others zero), for every tensor at once and then one tensor at a time. Zero and one are real
values: a quantized tensor's zero is its zero point, its one the nearest step to 1.0. Quantization parameters of the
quantized operands: the scale rounded to a power of two, the zero point 0 or the type's middle, per-channel scales
all equal; a quantized bias's scale follows its input's and filter's. Relaxed float32 computation turned off.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from harness.hal import OperandType
from harness.hal.sizes import QUANTIZED_TYPES, ZERO_POINT_RANGES
from harness.reduce._draft import Draft
from harness.reduce._graph import Graph, operand_type
from harness.reduce._state import State


def value_drafts(state: State) -> list[Draft]:
    """Every value, quantization and relaxation simplification of the state's model."""
    base = state.graph()
    tensors = state.data()
    drafts = quantization_drafts(base)
    simplifications: list[tuple[str, Callable[[dict, np.ndarray], np.ndarray | None]]] = [
        ("zeros", _zeros),
        ("ones", _ones),
        ("single", _single),
    ]
    for kind, simplify in simplifications[:2]:
        draft = _with_values(base, tensors, list(tensors), simplify, kind, f"every input and constant tensor: {kind}")
        if draft is not None:
            drafts.append(draft)
    for k in sorted(tensors, key=lambda k: -tensors[k].size):
        for kind, simplify in simplifications:
            draft = _with_values(base, tensors, [k], simplify, kind, f"operand {k}: {kind}")
            if draft is not None:
                drafts.append(draft)
    if base.model.get("relaxComputationFloat32toFloat16"):
        g = base.copy()
        g.model["relaxComputationFloat32toFloat16"] = False
        drafts.append(Draft("relaxed", "compute float32 as float32 (not relaxed)", g.compact()))
    return drafts


def real_zero(operand: dict) -> int:
    """The stored value of real zero in an operand."""
    return int(operand.get("zeroPoint", 0)) if operand_type(operand) in QUANTIZED_TYPES else 0


def real_one(operand: dict, value: np.ndarray) -> int | float | bool:
    """The stored value nearest to real one in an operand whose values are of `value`'s dtype."""
    scale = float(operand.get("scale", 0.0) or 0.0)
    if operand_type(operand) in QUANTIZED_TYPES and scale > 0:
        info = np.iinfo(value.dtype)
        return min(max(real_zero(operand) + round(1.0 / scale), int(info.min)), int(info.max))
    return True if value.dtype.kind == "b" else 1


def middle_zero_point(t: int) -> int:
    """The middle of a quantized type's zero point range."""
    lo, hi = ZERO_POINT_RANGES[t]
    return (lo + hi + 1) // 2


def _zeros(operand: dict, value: np.ndarray) -> np.ndarray:
    return np.full_like(value, real_zero(operand))


def _ones(operand: dict, value: np.ndarray) -> np.ndarray:
    return np.full_like(value, real_one(operand, value))


def _single(operand: dict, value: np.ndarray) -> np.ndarray | None:
    zero = real_zero(operand)
    flat = value.reshape(-1)
    distance = np.abs(flat.astype(np.float64) - zero)
    distance[np.isnan(distance)] = np.inf
    if np.count_nonzero(distance) <= 1:
        return None
    out = np.full_like(flat, zero)
    i = int(np.argmax(distance))
    out[i] = flat[i]
    return out.reshape(value.shape)


def _with_values(
    base: Graph,
    tensors: dict[int, np.ndarray],
    operands: list[int],
    simplify: Callable[[dict, np.ndarray], np.ndarray | None],
    kind: str,
    what: str,
) -> Draft | None:
    g = base.copy()
    changed = False
    for k in operands:
        value = simplify(g.operands[k], tensors[k])
        if value is None or np.array_equal(value, tensors[k], equal_nan=value.dtype.kind == "f"):
            continue
        changed = True
        if k in g.inputs:
            g.values[k] = value
        else:
            g.set_constant(k, value)
    return Draft(kind, what, g.compact()) if changed else None


# -- quantization ---------------------------------------------------------------------------------------------------


def _power_of_two(scale: float) -> float:
    return 2.0 ** round(math.log2(scale))


def quantization_drafts(base: Graph) -> list[Draft]:
    """Scales to powers of two (all at once, then one operand at a time), zero points to 0 or the type's middle,
    per-channel scales equal."""
    quantized = [k for k, o in enumerate(base.operands) if operand_type(o) in QUANTIZED_TYPES]
    drafts: list[Draft] = []

    def add(kind: str, what: str, edit: Callable[[Graph], bool]) -> None:
        g = base.copy()
        if edit(g):
            _fit_bias_scales(g)
            drafts.append(Draft(kind, what, g.compact()))

    def all_scales(g: Graph) -> bool:
        return any([_round_scale(g.operands[k]) for k in quantized])

    add("scale", "every quantized scale a power of two", all_scales)
    for k in quantized:
        add("scale", f"operand {k}: scale a power of two", lambda g, k=k: _round_scale(g.operands[k]))
        t = operand_type(base.operands[k])
        lo, hi = ZERO_POINT_RANGES[t]
        for zero_point in dict.fromkeys((0, middle_zero_point(t))):
            if lo <= zero_point <= hi and int(base.operands[k].get("zeroPoint", 0)) != zero_point:
                add("zero_point", f"operand {k}: zero point {zero_point}",
                    lambda g, k=k, z=zero_point: _set_zero_point(g.operands[k], z))  # fmt: skip
        scales = base.operands[k].get("channelQuant", {}).get("scales", [])
        if len(set(scales)) > 1:
            add("channel_scales", f"operand {k}: per-channel scales equal", lambda g, k=k: _equal_scales(g.operands[k]))
    return drafts


def _round_scale(operand: dict) -> bool:
    changed = False
    scale = float(operand.get("scale", 0.0) or 0.0)
    if scale > 0 and _power_of_two(scale) != scale:
        operand["scale"], changed = _power_of_two(scale), True
    quant = operand.get("channelQuant")
    if quant is not None:
        scales = [float(s) for s in quant.get("scales", [])]
        rounded = [_power_of_two(s) if s > 0 else s for s in scales]
        if rounded != scales:
            quant["scales"], changed = rounded, True
    return changed


def _set_zero_point(operand: dict, zero_point: int) -> bool:
    operand["zeroPoint"] = zero_point
    return True


def _equal_scales(operand: dict) -> bool:
    quant = operand["channelQuant"]
    quant["scales"] = [quant["scales"][0]] * len(quant["scales"])
    return True


def _fit_bias_scales(graph: Graph) -> None:
    """A quantized bias (TENSOR_INT32 input 2 with a scale, after two quantized inputs with one scale each) gets the
    product of their scales, as the convolutions and FULLY_CONNECTED require."""
    for op in graph.operations:
        inputs = op["inputs"]
        if len(inputs) < 3:
            continue
        data, weights, bias = (graph.operands[k] for k in inputs[:3])
        if operand_type(bias) != OperandType.TENSOR_INT32 or not float(bias.get("scale", 0.0) or 0.0) > 0:
            continue
        if operand_type(data) in QUANTIZED_TYPES and operand_type(weights) in QUANTIZED_TYPES:
            if "channelQuant" not in weights:
                bias["scale"] = float(data.get("scale", 0.0)) * float(weights.get("scale", 0.0))
