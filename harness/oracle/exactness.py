"""Outputs the HAL defines exactly (REQUIREMENTS O2): compared with no tolerance at all.

A tolerance exists for rounding, not for logic. An index, a count, a hash bit, a copied integer or the result of
integer arithmetic has one right value, and one step off is a wrong answer, not a rounding. The table below says,
per operation and output, which integer outputs are exact and why, and which keep the tolerance of their type
and why (the HAL leaves a rounding open there). An operation output without a row keeps its type's tolerance
(every operation with an integer output has rows: tests/oracle/test_exactness.py checks it).

Exactness also needs exact inputs: ARGMAX of a tensor some quantized ADD rounded is only as determined as that
rounding. An output is judged exactly when its row says so and every input of its operation is itself exactly
determined: a model input, a constant, or an exact output of an earlier operation (floats count as exact inputs
unless the model is relaxed, when a driver may hold them in float16 and so merge or reorder them). Rows marked
`shape_only` depend on shapes alone (RANK) and are exact whatever the values.

Edges the HAL leaves open are not charged to exactness: ARGMAX and ARGMIN name no index among equal extremes, so
the reference's stability probe names the other one (harness.ops.reduction) and a tie makes the case ill
conditioned instead of a finding. TOPK_V2 has no such edge: the HAL orders equal values by larger index first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.hal import Model, OperandLifeTime, OperandType, OperationType

T = OperandType
Op = OperationType

# Integer-valued result types: the only ones an exact row may cover (floats keep their tolerance; the HAL lets
# a driver compute them at a lower precision).
INT32_TYPES = frozenset({T.TENSOR_INT32, T.INT32})
_FLOAT_TYPES = frozenset({T.TENSOR_FLOAT32, T.FLOAT32, T.TENSOR_FLOAT16, T.FLOAT16})
_RELAXABLE = frozenset({T.TENSOR_FLOAT32, T.FLOAT32})
# Values a model gives (rather than computes): as exact as their bits.
_GIVEN = frozenset(
    {
        OperandLifeTime.SUBGRAPH_INPUT,
        OperandLifeTime.CONSTANT_COPY,
        OperandLifeTime.CONSTANT_REFERENCE,
        OperandLifeTime.NO_VALUE,
        OperandLifeTime.SUBGRAPH,
    }
)


@dataclass(frozen=True)
class Row:
    """How one operation's outputs of the covered types are compared, and the HAL's reason."""

    exact: bool
    reason: str
    outputs: tuple[int, ...] | None = None  # output positions covered; None = every output
    types: frozenset[int] = INT32_TYPES  # output operand types covered
    integral_inputs: bool = False  # covers only operations whose inputs are all of integer types
    shape_only: bool = False  # the value depends on shapes alone, never on input values


_ARITHMETIC = Row(
    True,
    "integer arithmetic on TENSOR_INT32 has one result (the HAL requires fused activation NONE; a result "
    "outside int32 is unspecified and not judged at all)",
)
_COPY = Row(True, "copies input elements: every output value is one of the input's values, unchanged")

TABLE: dict[OperationType, tuple[Row, ...]] = {
    Op.ADD: (_ARITHMETIC,),
    Op.SUB: (_ARITHMETIC,),
    Op.MUL: (_ARITHMETIC,),
    Op.DIV: (Row(True, "TENSOR_INT32 DIV is floor division in the HAL's words (5 // 2 = 2, -5 // 2 = -3)"),),
    Op.ABS: (_ARITHMETIC,),
    Op.NEG: (_ARITHMETIC,),
    Op.MAXIMUM: (_ARITHMETIC,),
    Op.MINIMUM: (_ARITHMETIC,),
    Op.ARGMAX: (Row(True, "the index of the largest element along the axis"),),
    Op.ARGMIN: (Row(True, "the index of the smallest element along the axis"),),
    Op.TOPK_V2: (
        Row(True, "TENSOR_INT32 values are copies of the k largest input values", outputs=(0,)),
        Row(True, "indices of the k largest values; equal values: the larger index first (the HAL)", outputs=(1,)),
    ),
    Op.LSH_PROJECTION: (Row(True, "hash bits: each output is a sign bit (0 or 1) or a bucket built from them"),),
    Op.HASHTABLE_LOOKUP: (
        Row(True, "TENSOR_INT32 values are copies of the looked-up rows", outputs=(0,)),
        Row(
            True,
            "hits is a 0/1 flag per lookup, stored as TENSOR_QUANT8_ASYMM (a count, not a rounded real)",
            outputs=(1,),
            types=frozenset({T.TENSOR_QUANT8_ASYMM}),
        ),
    ),
    Op.EMBEDDING_LOOKUP: (_COPY,),
    Op.GATHER: (_COPY,),
    Op.SELECT: (_COPY,),
    Op.SLICE: (_COPY,),
    Op.SPLIT: (_COPY,),
    Op.TILE: (_COPY,),
    Op.EXPAND_DIMS: (_COPY,),
    Op.FILL: (Row(True, "every element is the given INT32 value"),),
    Op.RANK: (Row(True, "the input's rank, a fact of its shape", shape_only=True),),
    Op.BOX_WITH_NMS_LIMIT: (Row(True, "class ids and batch indices of the kept boxes", outputs=(2, 3)),),
    Op.GENERATE_PROPOSALS: (Row(True, "batch indices of the proposals", outputs=(2,)),),
    Op.DETECTION_POSTPROCESSING: (
        Row(True, "class ids of the detections and the number of detections per batch", outputs=(2, 3)),
    ),
    Op.CAST: (
        Row(
            True,
            "between integer types CAST ignores scale and zeroPoint and keeps the integer value (the HAL)",
            integral_inputs=True,
        ),
        Row(False, "the HAL does not say how CAST rounds a float to an integer (truncation or to nearest)"),
    ),
    Op.RANDOM_MULTINOMIAL: (Row(False, "random samples: the reference has no values to compare with"),),
    Op.IF: (Row(False, "the value is what a referenced subgraph computes; exactness is not followed into subgraphs"),),
    Op.WHILE: (
        Row(False, "the value is what a referenced subgraph computes; exactness is not followed into subgraphs"),
    ),
}


def row_for(op_type: int, position: int, output_type: int, input_types: Sequence[int | None]) -> Row | None:
    """The table row covering output `position` (of `output_type`) of an operation, or None (type tolerance)."""
    for row in TABLE.get(op_type, ()):  # type: ignore[call-overload]
        if row.outputs is not None and position not in row.outputs:
            continue
        if output_type not in row.types:
            continue
        if row.integral_inputs and any(t in _FLOAT_TYPES for t in input_types if t is not None):
            continue
        return row
    return None


def exact_outputs(model: Model) -> set[int]:
    """Positions of main outputs the HAL defines exactly, given exactly determined inputs (see the module)."""
    main = model.main
    relaxed = model.relax_computation_float32_to_float16
    determined = {
        i
        for i, operand in enumerate(main.operands)
        if operand.lifetime in _GIVEN and not (relaxed and operand.type in _RELAXABLE)
    }
    for op in main.operations:
        input_types = [main.operands[i].type if 0 <= i < len(main.operands) else None for i in op.inputs]
        inputs_determined = all(i in determined for i in op.inputs)
        for position, index in enumerate(op.outputs):
            row = row_for(op.type, position, main.operands[index].type, input_types)
            if row is not None and row.exact and (inputs_determined or row.shape_only):
                determined.add(index)
    exact = set()
    for position, index in enumerate(main.output_indexes):
        # A main input passed straight through is determined, but no operation defines it: its type decides.
        if index in determined and main.operands[index].lifetime == OperandLifeTime.SUBGRAPH_OUTPUT:
            exact.add(position)
    return exact
