"""Normalizations: L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, INSTANCE_NORMALIZATION."""

from __future__ import annotations

import numpy as np

from harness.hal import OperationType
from harness.ops._nn_util import (
    BOOL,
    F16,
    F32,
    LAYOUTS,
    Q8,
    Q8S,
    combine,
    define_single_form,
    from_nhwc,
    scalar_type_for,
    scalars,
    tensor,
    to_nhwc,
)
from harness.ops.common import (
    UnspecifiedResult,
    axis_in_range,
    fixed_output_quant,
    from_real,
    is_quantized,
    normalize_axis,
    same_shape,
    scalar_at_least,
    to_real,
)
from harness.ops.registry import KernelContext, Signature

# Below this norm the HAL's reference divides by the epsilon instead (an all-zero vector normalizes to zero).
L2_EPSILON = 1e-6


# --------------------------------------------------------------------------------------------------------------
# L2_NORMALIZATION

_L2_OUTPUT_QUANT = {Q8: (1.0 / 128, 128), Q8S: (1.0 / 128, 0)}


def _l2_signatures() -> list[Signature]:
    sigs = [Signature((tensor("input", F32, 4),), (tensor("output", F32, 4),), None, "V1_0")]
    for t, version in [(F32, "V1_2"), (F16, "V1_2"), (Q8, "V1_2"), (Q8S, "V1_3")]:
        check = axis_in_range(1)
        if t in _L2_OUTPUT_QUANT:
            check = combine(check, fixed_output_quant(*_L2_OUTPUT_QUANT[t]))
        sigs.append(
            Signature(
                (tensor("input", t, (1, 4)), *scalars("axis", optional=True)),
                (tensor("output", t, (1, 4)),),
                1,
                version,
                check,
            )
        )
    return sigs


def l2_normalization_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """Each 1-D slice along the axis divided by its L2 norm.

    A quantized slice is normalized by its centred integers (stored value - zero point): x / |x| does not depend
    on the input scale, which cancels, and the epsilon (a real-valued guard against dividing by zero) must not
    make it depend on it; a slice of all zero points still normalizes to zero.
    """
    operand = ctx.input_operands[0]
    if is_quantized(operand):
        x = np.asarray(ctx.inputs[0], dtype=np.float64) - operand.zero_point
    else:
        x = to_real(ctx.inputs[0], operand)
    axis = normalize_axis(int(ctx.scalar(1, -1)), x.ndim)
    norm = np.sqrt(np.sum(x * x, axis=axis, keepdims=True))
    return [from_real(x / np.maximum(norm, L2_EPSILON), ctx.output_operands[0])]


# --------------------------------------------------------------------------------------------------------------
# LOCAL_RESPONSE_NORMALIZATION


def _lrn_signatures() -> list[Signature]:
    def args(t: int, rank: int | tuple[int, int], with_axis: bool) -> tuple:
        s = scalar_type_for(t)
        base = (tensor("input", t, rank), *scalars("radius"), *scalars("bias", "alpha", "beta", t=s))
        return base + (tuple(scalars("axis", optional=True)) if with_axis else ())

    # The HAL text asks for a non-zero bias, but the conformance vectors use bias 0: not a validity rule.
    check = combine(scalar_at_least(1, 0, "radius"), axis_in_range(5))
    return [
        Signature(args(F32, 4, False), (tensor("output", F32, 4),), None, "V1_0", check),
        Signature(args(F32, (1, 4), True), (tensor("output", F32, (1, 4)),), 5, "V1_2", check),
        Signature(args(F16, (1, 4), True), (tensor("output", F16, (1, 4)),), 5, "V1_2", check),
    ]


def lrn_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """input / (bias + alpha * sum of squares within `radius` along the axis) ** beta."""
    x = to_real(ctx.inputs[0], ctx.input_operands[0])
    radius = int(ctx.scalar(1))
    bias, alpha, beta = (float(ctx.scalar(i)) for i in (2, 3, 4))
    axis = normalize_axis(int(ctx.scalar(5, -1)), x.ndim)
    xm = np.moveaxis(x, axis, -1)
    squares = xm * xm
    depth = xm.shape[-1]
    sqr_sum = np.zeros_like(xm)
    for d in range(depth):
        lo, hi = max(0, d - radius), min(depth, d + radius + 1)
        sqr_sum[..., d] = squares[..., lo:hi].sum(axis=-1)
    out = xm / np.power(bias + alpha * sqr_sum, beta)
    return [from_real(np.moveaxis(out, -1, axis), ctx.output_operands[0])]


# --------------------------------------------------------------------------------------------------------------
# INSTANCE_NORMALIZATION


def instance_norm_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """(input - mean) * gamma / sqrt(variance + epsilon) + beta, statistics over the spatial dimensions.

    This is the HAL's definition (the variance about the mean). The published v1_2 vectors of this spec divide
    by the raw second moment instead; they are listed in harness.conformance.known_issues.
    """
    nchw = bool(ctx.scalar(4))
    x = to_nhwc(to_real(ctx.inputs[0], ctx.input_operands[0]), nchw)
    gamma, beta, epsilon = (float(ctx.scalar(i)) for i in (1, 2, 3))
    count = max(x.shape[1] * x.shape[2], 1)
    mean = x.sum(axis=(1, 2), keepdims=True) / count
    variance = ((x - mean) ** 2).sum(axis=(1, 2), keepdims=True) / count
    if np.any(variance + epsilon <= 0):
        raise UnspecifiedResult("instance normalization of a constant slice with epsilon 0")
    out = (x - mean) * gamma / np.sqrt(variance + epsilon) + beta
    return [from_real(from_nhwc(out, nchw), ctx.output_operands[0])]


def _instance_signatures() -> list[Signature]:
    return [
        Signature(
            (
                tensor("input", t, 4),
                *scalars("gamma", "beta", "epsilon", t=scalar_type_for(t)),
                *scalars("nchw", t=BOOL),
            ),
            (tensor("output", t, 4),),
            None,
            "V1_2",
            scalar_at_least(3, 0.0, "epsilon"),
        )
        for t in (F32, F16)
    ]


define_single_form(
    OperationType.L2_NORMALIZATION,
    "normalization",
    _l2_signatures(),
    same_shape,
    l2_normalization_kernel,
    {"input_range": (-4.0, 4.0), "params": {"axis": "axis"}},
)
define_single_form(
    OperationType.LOCAL_RESPONSE_NORMALIZATION,
    "normalization",
    _lrn_signatures(),
    same_shape,
    lrn_kernel,
    {
        "input_range": (-4.0, 4.0),
        "params": {"radius": (0, 3), "bias": (0.5, 2.0), "alpha": (0.0, 1.0), "beta": (0.25, 1.0), "axis": "axis"},
    },
)
define_single_form(
    OperationType.INSTANCE_NORMALIZATION,
    "normalization",
    _instance_signatures(),
    same_shape,
    instance_norm_kernel,
    {
        "input_range": (-4.0, 4.0),
        "params": {"gamma": (0.5, 2.0), "beta": (-1.0, 1.0), "epsilon": (1e-4, 1e-2), "nchw": LAYOUTS},
    },
)
