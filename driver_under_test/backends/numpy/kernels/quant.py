"""Type conversions: QUANTIZE, DEQUANTIZE and CAST.

QUANTIZE divides in float32 and rounds half away from zero before saturating, as the HAL formula
round(x / scale) + zeroPoint prescribes. CAST ignores quantization parameters: it converts stored values,
truncating floats toward zero and saturating to the destination's range.
"""

from __future__ import annotations

import numpy as np

from driver_under_test.backends.numpy.kernels.common import (
    BOOL8,
    FLOAT_TYPES,
    FLOATS,
    I32,
    Q8,
    QUANT8,
    QUANT8_TYPES,
    compute_float,
    quant_dtype,
    quant_limits,
    quiet,
    required,
    round_half_away,
    store,
)
from driver_under_test.backends.numpy.kernels.registry import OpCall, kernel
from driver_under_test.errors import invalid
from harness.hal import OperandType, OperationType, numpy_dtype


@kernel(OperationType.QUANTIZE, FLOATS)
@quiet
def quantize_kernel(call: OpCall) -> list[np.ndarray]:
    """round(x / scale) + zeroPoint, saturated to the 8-bit output type (NaN maps to the zero point)."""
    x, out = required(call, 0), call.outputs[0]
    if out.type not in QUANT8_TYPES:
        raise invalid(f"QUANTIZE cannot produce operand type {out.type}", "exec.operand_type")
    scaled = round_half_away(compute_float(x.data).astype(np.float32) / np.float32(out.scale))
    lo, hi = quant_limits(out.type)
    codes = np.clip(np.nan_to_num(scaled, nan=0.0) + out.zero_point, lo, hi)
    return [codes.astype(quant_dtype(out.type))]


_DEQUANTIZE_TYPES = (*QUANT8, OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL)


@kernel(OperationType.DEQUANTIZE, _DEQUANTIZE_TYPES)
@quiet
def dequantize_kernel(call: OpCall) -> list[np.ndarray]:
    """(q - zeroPoint) * scale in float32, with per-channel scales along channelDim when present."""
    x, out = required(call, 0), call.outputs[0]
    if out.type not in FLOAT_TYPES:
        raise invalid(f"DEQUANTIZE cannot produce operand type {out.type}", "exec.operand_type")
    centred = x.data.astype(np.float32) - np.float32(x.zero_point)
    if x.channel_scales is not None:
        if not 0 <= x.channel_dim < x.data.ndim or x.channel_scales.size != x.data.shape[x.channel_dim]:
            raise invalid("per-channel scales do not match the channel dimension", "exec.quant_params")
        shape = [1] * x.data.ndim
        shape[x.channel_dim] = -1
        scale = x.channel_scales.astype(np.float32).reshape(shape)
    else:
        scale = np.float32(x.scale)
    return [store(centred * scale, out)]


# Types that convert among each other; the others may only be cast to themselves.
_CONVERTIBLE = frozenset({int(OperandType.TENSOR_FLOAT32), int(OperandType.TENSOR_FLOAT16), int(I32), int(Q8)})
_IDENTITY_ONLY = (
    BOOL8,
    OperandType.TENSOR_QUANT16_ASYMM,
    OperandType.TENSOR_QUANT16_SYMM,
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
    OperandType.TENSOR_QUANT8_SYMM,
)


@kernel(OperationType.CAST, (*FLOATS, I32, Q8, *_IDENTITY_ONLY))
@quiet
def cast_kernel(call: OpCall) -> list[np.ndarray]:
    """Convert stored values to the output type: floats truncate toward zero, integers saturate."""
    x, out = required(call, 0), call.outputs[0]
    if x.type != out.type and not (x.type in _CONVERTIBLE and out.type in _CONVERTIBLE):
        raise invalid(f"CAST from {x.type} to {out.type} is not supported", "exec.operand_type")
    target = numpy_dtype(out.type)
    if target.kind in "fb" or x.data.dtype == target:
        return [x.data.astype(target)]
    info = np.iinfo(target)
    values = x.data
    if values.dtype.kind == "f":
        values = np.trunc(np.nan_to_num(values.astype(np.float64), nan=0.0))
    return [np.clip(values, info.min, info.max).astype(target)]
