"""Outputs whose quantization types.hal ties to an input's ("the scale and zeroPoint must be the same as
input0"), by operation: the operations that move, pad, pool, clamp, select or reduce to an extreme without
rescaling, and the detection outputs that carry scores or boxes through. The signature checks of the operations
(in their modules) refuse a model that breaks this; the mutation quantization_unlike_input breaks it.
"""

from __future__ import annotations

from harness.hal import OperationType

_O = OperationType

# Every output of the operation (SPLIT's outputs are as many as its split count).
EVERY_OUTPUT = -1
_FIRST = ((0, 0),)
# Operation -> ((output position or EVERY_OUTPUT, input position), ...)
SAME_QUANTIZATION: dict[int, tuple[tuple[int, int], ...]] = {
    **{
        int(op): _FIRST
        for op in (
            _O.AVERAGE_POOL_2D,
            _O.MAX_POOL_2D,
            _O.RELU,
            _O.RELU1,
            _O.RELU6,
            _O.RESHAPE,
            _O.SQUEEZE,
            _O.EXPAND_DIMS,
            _O.TRANSPOSE,
            _O.PAD,
            _O.PAD_V2,
            _O.SLICE,
            _O.STRIDED_SLICE,
            _O.TILE,
            _O.GATHER,
            _O.TOPK_V2,
            _O.SPACE_TO_DEPTH,
            _O.DEPTH_TO_SPACE,
            _O.SPACE_TO_BATCH_ND,
            _O.BATCH_TO_SPACE_ND,
            _O.CHANNEL_SHUFFLE,
            _O.MEAN,
            _O.REDUCE_MAX,
            _O.REDUCE_MIN,
            _O.RESIZE_BILINEAR,
            _O.RESIZE_NEAREST_NEIGHBOR,
            _O.ROI_POOLING,
            _O.GENERATE_PROPOSALS,
        )
    },
    int(_O.SPLIT): ((EVERY_OUTPUT, 0),),
    int(_O.EMBEDDING_LOOKUP): ((0, 1),),
    int(_O.HASHTABLE_LOOKUP): ((0, 2),),
    int(_O.BOX_WITH_NMS_LIMIT): ((0, 0), (1, 1)),
}
SAME_OPERATIONS = frozenset(SAME_QUANTIZATION)


def kept_from(op_type: int, output: int) -> int | None:
    """The input position whose quantization output `output` of the operation keeps, or None."""
    for out, inp in SAME_QUANTIZATION.get(int(op_type), ()):
        if out in (output, EVERY_OUTPUT):
            return inp
    return None
