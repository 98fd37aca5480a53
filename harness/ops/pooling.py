"""2-D pooling: AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D.

Every window covers only the input elements inside the input (padding contributes nothing and does not count
towards the average), as the HAL's formulas divide by sum(1) over the window's valid elements.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.hal import OperationType
from harness.ops._nn_util import (
    BOOL,
    F16,
    F32,
    LAYOUTS,
    PADDING_SAME,
    PADDING_VALID,
    Q8,
    Q8S,
    Inputs,
    combine,
    from_nhwc,
    layout_shape,
    nhwc_shape,
    pad_nhwc,
    positive_spatial_output,
    resolve_window,
    scalars,
    tensor,
    to_nhwc,
    window_taps,
)
from harness.ops.common import UnspecifiedResult, apply_activation, define, from_real, same_quant_as_input, to_real
from harness.ops.parameters import WINDOW_DOMAINS, domain_problems, refuse_outside
from harness.ops.registry import KernelContext, ShapeContext, Signature

EXPLICIT = {
    "pad_left": 1,
    "pad_right": 2,
    "pad_top": 3,
    "pad_bottom": 4,
    "stride_w": 5,
    "stride_h": 6,
    "filter_w": 7,
    "filter_h": 8,
    "activation": 9,
    "nchw": 10,
}
IMPLICIT = {"padding_scheme": 1, "stride_w": 2, "stride_h": 3, "filter_w": 4, "filter_h": 5, "activation": 6, "nchw": 7}


def pool_form(inputs: Inputs) -> dict[str, int]:
    """The implicit form has 7 inputs (8 with the layout flag), the explicit one 10 (11)."""
    return IMPLICIT if inputs.count in (7, 8) else EXPLICIT


def _params_check(ctx: ShapeContext) -> list[str]:
    inputs = Inputs(ctx)
    problems = domain_problems(WINDOW_DOMAINS, _named_values(inputs))
    for name, pos in pool_form(inputs).items():
        value = inputs.scalar(pos) if pos < inputs.count else None
        if value is not None and name.startswith("filter") and value < 1:
            problems.append(f"{name} must be positive")
    return problems


def _named_values(inputs: Inputs) -> list[tuple[str, object]]:
    """(name, value) of every scalar parameter given (None when its value is unknown)."""
    return [(name, inputs.scalar(pos) if pos < inputs.count else None) for name, pos in pool_form(inputs).items()]


def _signatures(typings: list[tuple[int, str]]) -> list[Signature]:
    """For each typing and form: a HAL 1.0 signature without the layout flag (for 1.0 typings) and one with
    the optional layout flag (HAL 1.2 or the typing's version)."""
    sigs = []
    for form in (EXPLICIT, IMPLICIT):
        names = sorted(form, key=form.__getitem__)
        for t, version in typings:
            check = combine(_params_check, same_quant_as_input(), positive_spatial_output(pool_shape))
            base = [tensor("input", t, 4)] + scalars(*[n for n in names if n != "nchw"])
            out = (tensor("output", t, 4),)
            if version == "V1_0":
                sigs.append(Signature(tuple(base), out, None, "V1_0", check))
            full = base + scalars("nchw", t=BOOL, optional=True)
            sigs.append(Signature(tuple(full), out, len(base), max(version, "V1_2"), check))
    return sigs


def pool_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """Output [N, OH, OW, C] from the window parameters."""
    inputs = Inputs(ctx)
    win = resolve_window(inputs, pool_form(inputs))
    n, h, w, c = nhwc_shape(inputs.shape(0), win.nchw)
    oh, ow = win.out_hw(h, w)
    return [layout_shape(n, oh, ow, c, win.nchw)]


Reducer = Callable[[list[tuple[np.ndarray, np.ndarray]]], np.ndarray]


def _pool_kernel(reduce: Reducer) -> Callable[[KernelContext], list[np.ndarray]]:
    """A pooling kernel: `reduce` gets, per window tap, (values, validity mask) for every output position."""

    def kernel(ctx: KernelContext) -> list[np.ndarray]:
        inputs = Inputs(ctx)
        # Values given at run time may lie outside their domains (the validator refused constants that do).
        refuse_outside(WINDOW_DOMAINS, _named_values(inputs))
        win = resolve_window(inputs, pool_form(inputs))
        x = to_nhwc(to_real(ctx.inputs[0], ctx.input_operands[0]), win.nchw)
        n, h, w, _ = x.shape
        oh, ow = win.out_hw(h, w)
        xp = pad_nhwc(x, win)
        valid = pad_nhwc(np.ones((1, h, w, 1)), win) > 0
        taps = [(xp[:, rows, cols, :], valid[:, rows, cols, :]) for _, _, rows, cols in window_taps(win, oh, ow)]
        out = apply_activation(reduce(taps), win.activation)
        return [from_real(from_nhwc(out, win.nchw), ctx.output_operands[0])]

    return kernel


def _count(taps: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    counts = sum(m.astype(np.float64) for _, m in taps)
    if np.any(counts == 0):
        # A window lying wholly in the padding has no element: its mean is 0 / 0, which the HAL leaves undefined.
        raise UnspecifiedResult("a pooling window lies wholly in the padding")
    return counts


def average(taps: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Mean of the valid elements of each window."""
    return sum(np.where(m, v, 0.0) for v, m in taps) / _count(taps)


def maximum(taps: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Maximum of the valid elements of each window."""
    best = np.full(np.broadcast(taps[0][0], taps[0][1]).shape, -np.inf)
    for v, m in taps:
        best = np.where(m, np.maximum(best, v), best)
    return np.where(np.isneginf(best), 0.0, best)


def l2(taps: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Root of the mean square of the valid elements of each window."""
    return np.sqrt(sum(np.where(m, v * v, 0.0) for v, m in taps) / _count(taps))


_HINTS = {
    "input_range": (-4.0, 4.0),
    "params": {
        "pad_left": (0, 2),
        "pad_right": (0, 2),
        "pad_top": (0, 2),
        "pad_bottom": (0, 2),
        "padding_scheme": [PADDING_SAME, PADDING_VALID],
        "stride_w": (1, 3),
        "stride_h": (1, 3),
        "filter_w": (1, 3),
        "filter_h": (1, 3),
        "activation": "fused_activation",
        "nchw": LAYOUTS,
    },
    "note": "explicit paddings should stay below the filter size so every window sees the input",
}
_ALL = [(F32, "V1_0"), (Q8, "V1_0"), (F16, "V1_2"), (Q8S, "V1_3")]

define(OperationType.AVERAGE_POOL_2D, "pooling", _signatures(_ALL), pool_shape, _pool_kernel(average), _HINTS)
define(OperationType.MAX_POOL_2D, "pooling", _signatures(_ALL), pool_shape, _pool_kernel(maximum), _HINTS)
define(
    OperationType.L2_POOL_2D,
    "pooling",
    _signatures([(F32, "V1_0"), (F16, "V1_2")]),
    pool_shape,
    _pool_kernel(l2),
    _HINTS,
)
