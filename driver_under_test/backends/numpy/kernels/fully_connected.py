"""FULLY_CONNECTED: a matrix multiply against the transposed weights, float32 or int32 with requantization."""

from __future__ import annotations

import numpy as np

from driver_under_test.backends.numpy.kernels._conv_common import (
    FLOAT_TYPES,
    QUANT8_TYPES,
    conv_multipliers,
    filter_zero_point,
    finish_quantized,
    float_bias,
    int32_bias,
    store_float,
    to_float32,
)
from driver_under_test.backends.numpy.kernels.common import float_activation, quiet
from driver_under_test.backends.numpy.kernels.registry import OpCall, kernel
from driver_under_test.errors import invalid
from harness.hal import OperationType


@kernel(OperationType.FULLY_CONNECTED, (*FLOAT_TYPES, *QUANT8_TYPES))
@quiet
def fully_connected(call: OpCall) -> list[np.ndarray]:
    """outputs = activation(inputs * weights' + bias), the input flattened to [batch, input_size]."""
    inp, weights, bias, out = call.inputs[0], call.inputs[1], call.inputs[2], call.outputs[0]
    activation = int(call.scalar(3))
    if activation not in (0, 1, 2, 3):
        raise invalid(f"unknown fused activation {activation}", "param.activation")
    if weights is None or weights.data is None or weights.data.ndim != 2:
        raise invalid("weights must be a rank-2 tensor", "shape.weights")
    units, input_size = weights.data.shape
    if inp.data.ndim < 2:
        raise invalid(f"input must have rank 2 or more, got {inp.data.ndim}", "shape.rank")
    if input_size == 0 or inp.data.size % input_size:
        raise invalid(f"input of {inp.data.size} elements is not a whole number of rows of {input_size}",
                      "shape.input")
    rows = inp.data.reshape(-1, input_size)
    if inp.type in QUANT8_TYPES:
        x = rows.astype(np.int32) - np.int32(inp.zero_point)
        w = weights.data.astype(np.int32) - np.int32(filter_zero_point(weights))
        acc = (x @ w.T).astype(np.int64) + int32_bias(bias, units)
        multiplier, shift = conv_multipliers(inp, weights, out, units)
        return [finish_quantized(acc, multiplier, shift, out, activation)]
    acc = to_float32(inp).reshape(-1, input_size) @ to_float32(weights).T + float_bias(bias, units)
    return [store_float(float_activation(acc, activation), out)]
