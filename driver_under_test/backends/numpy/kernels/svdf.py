"""SVDF: a rank-constrained dense layer over a sliding memory of its own feature-filter outputs."""

from __future__ import annotations

import numpy as np

from driver_under_test.backends.numpy.kernels._conv_common import FLOAT_TYPES
from driver_under_test.backends.numpy.kernels._recurrent import (
    activation_fn,
    check_shape,
    optional_f32,
    required_f32,
    store,
)
from driver_under_test.backends.numpy.kernels.common import quiet
from driver_under_test.backends.numpy.kernels.registry import OpCall, kernel
from driver_under_test.errors import invalid
from harness.hal import OperationType


@kernel(OperationType.SVDF, FLOAT_TYPES)
@quiet
def svdf(call: OpCall) -> list[np.ndarray]:
    """One SVDF step; outputs the updated state and the layer output.

    The state holds, per batch and filter, `memory_size` past feature-filter activations, oldest first. The
    newest activation goes into the last slot, the time filter is applied, and the memory then slides left by
    one, leaving the last slot empty for the next step.
    """
    x = required_f32(call, 0, 2, "input")
    features = required_f32(call, 1, 2, "weights_feature")
    time_weights = required_f32(call, 2, 2, "weights_time")
    bias = optional_f32(call, 3)
    state_in = required_f32(call, 4, 2, "state")
    rank = int(call.scalar(5))
    act = activation_fn(int(call.scalar(6, 0)))
    batch, input_size = x.shape
    filters, memory = time_weights.shape
    if rank < 1 or filters % rank:
        raise invalid(f"rank {rank} does not divide the {filters} filters", "param.rank")
    units = filters // rank
    check_shape(features, (filters, input_size), "weights_feature")
    check_shape(state_in, (batch, filters * memory), "state")
    if bias is not None:
        check_shape(bias, (units,), "bias")
    state = state_in.reshape(batch, filters, memory).copy()
    state[:, :, memory - 1] = x @ features.T
    # Time filtering: each filter's memory dotted with its own time weights.
    filtered = np.einsum("bfm,fm->bf", state, time_weights)
    output = filtered.reshape(batch, units, rank).sum(axis=2)
    if bias is not None:
        output = output + bias
    output = act(output)
    shifted = np.zeros_like(state)
    shifted[:, :, :-1] = state[:, :, 1:]
    return [store(shifted.reshape(batch, filters * memory), call.outputs[0]), store(output, call.outputs[1])]
