"""Outputs that keep an input's quantization (types.hal: "the scale and zeroPoint must be the same as input0"):
data movement, padding, pooling, the clamping activations, MEAN and REDUCE_MAX/MIN, resizing, selections and the
detection outputs that carry scores or boxes through. A model whose output declares another is invalid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from driver_under_test.errors import invalid
from driver_under_test.faults import FaultSet, define
from harness.hal import Operand, OperandType, OperationType

_O = OperationType
_QUANTIZED = frozenset(
    int(t)
    for t in (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT16_ASYMM)
)
_RULE = "V10.same_quantization"

SAME_QUANTIZATION_UNCHECKED = define(
    "same_quantization_unchecked",
    "validation",
    "Never compares an output's quantization with the input's whose quantization it must keep (RESHAPE, PAD, "
    "MAX_POOL_2D, RELU, GATHER, SPLIT, BOX_WITH_NMS_LIMIT, ... 32 operations): a model whose output declares "
    "another scale or zero point is accepted instead of INVALID_ARGUMENT (breaks V10) and computed as if it had "
    "the input's.",
).name

_FIRST = ((0, 0),)
# Operation -> (output position, input position) pairs; an output position of None stands for every output.
SAME_QUANTIZATION: dict[int, tuple[tuple[int | None, int], ...]] = {
    **{
        int(op): _FIRST
        for op in (
            _O.AVERAGE_POOL_2D,
            _O.BATCH_TO_SPACE_ND,
            _O.CHANNEL_SHUFFLE,
            _O.DEPTH_TO_SPACE,
            _O.EXPAND_DIMS,
            _O.GATHER,
            _O.GENERATE_PROPOSALS,
            _O.MAX_POOL_2D,
            _O.MEAN,
            _O.PAD,
            _O.PAD_V2,
            _O.REDUCE_MAX,
            _O.REDUCE_MIN,
            _O.RELU,
            _O.RELU1,
            _O.RELU6,
            _O.RESHAPE,
            _O.RESIZE_BILINEAR,
            _O.RESIZE_NEAREST_NEIGHBOR,
            _O.ROI_POOLING,
            _O.SLICE,
            _O.SPACE_TO_BATCH_ND,
            _O.SPACE_TO_DEPTH,
            _O.SQUEEZE,
            _O.STRIDED_SLICE,
            _O.TILE,
            _O.TOPK_V2,
            _O.TRANSPOSE,
        )
    },
    int(_O.BOX_WITH_NMS_LIMIT): ((0, 0), (1, 1)),
    int(_O.EMBEDDING_LOOKUP): ((0, 1),),
    int(_O.HASHTABLE_LOOKUP): ((0, 2),),
    int(_O.SPLIT): ((None, 0),),
}
SAME_OPERATIONS = frozenset(SAME_QUANTIZATION)


def _same(a: Operand, b: Operand) -> bool:
    # Scales travel as float32; one declared twice must compare equal whatever width it went through.
    return a.zero_point == b.zero_point and math.isclose(float(a.scale), float(b.scale), rel_tol=1e-6, abs_tol=0.0)


def check_same_quantization(
    op_type: int, inputs: Sequence[Operand], outputs: Sequence[Operand], what: object, faults: FaultSet
) -> None:
    """Raise INVALID_ARGUMENT when a quantized output's scale or zero point differs from its input's."""
    if faults.active(SAME_QUANTIZATION_UNCHECKED):
        return
    for out_at, in_at in SAME_QUANTIZATION.get(op_type, ()):
        positions = range(len(outputs)) if out_at is None else (out_at,)
        for k in positions:
            if k >= len(outputs) or in_at >= len(inputs):
                continue
            source, result = inputs[in_at], outputs[k]
            if int(result.type) not in _QUANTIZED or result.type != source.type or _same(result, source):
                continue
            raise invalid(
                f"{what} output {k} must have input {in_at}'s scale {source.scale} and zero point "
                f"{source.zero_point}, got {result.scale} and {result.zero_point}",
                _RULE,
            )
