"""The driver's own table of operation signatures (NN HAL 1.3 types.hal) and the check of one operation against it.

Each operation has a primary operand (input 0 unless noted) whose type selects the typing; every other position
accepts a set of types computed from that primary type. A Form lists the input and output slots of one calling
convention (explicit or implicit padding, resize by shape or by scale, ...), with trailing groups of optional
inputs (or outputs) that may be appended in order, and at most one repeated slot per list (CONCATENATION's
tensors, SPLIT's outputs, IF/WHILE's data operands). Only the operand types and the presence of values are
checked here; shapes and values are the kernels' business.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from driver_under_test.errors import DriverError, invalid
from harness.hal import Operand, OperandLifeTime, OperandType, OperationType

_T = OperandType
F16, F32 = _T.TENSOR_FLOAT16, _T.TENSOR_FLOAT32
Q8, Q8S = _T.TENSOR_QUANT8_ASYMM, _T.TENSOR_QUANT8_ASYMM_SIGNED
Q8SYMM, QPC = _T.TENSOR_QUANT8_SYMM, _T.TENSOR_QUANT8_SYMM_PER_CHANNEL
Q16A, Q16S = _T.TENSOR_QUANT16_ASYMM, _T.TENSOR_QUANT16_SYMM
TI32, TB8 = _T.TENSOR_INT32, _T.TENSOR_BOOL8

FLOAT_TENSORS = frozenset({F16, F32})
# Primary-type sets most operations share.
FLOATS = FLOAT_TENSORS
FQ = frozenset({F16, F32, Q8, Q8S})  # floats and asymmetric 8-bit quantized
FQI = FQ | {TI32}
COMPARABLE = frozenset({TB8, F16, F32, TI32, Q8, Q8S})
# Every HAL tensor type except the OEM one (RANK's list; LSH_PROJECTION's "no restriction").
ANY_TENSOR_TYPES = frozenset({F16, F32, TI32, Q8, Q8S, Q8SYMM, QPC, Q16A, Q16S, TB8})
# What IF and WHILE may pass to a subgraph: any HAL type but a subgraph reference.
ANY_DATA_TYPES = frozenset(t for t in _T if t != _T.SUBGRAPH)
# A plain int: reading an enum member off its class costs more than the comparison it is used in.
_NO_VALUE = int(OperandLifeTime.NO_VALUE)
# Messages name types: looking a name up beats asking the enum for it.
_TYPE_NAMES = {int(t): t.name for t in _T}


@dataclass(frozen=True)
class Slot:
    """One operand position: the types it accepts given the primary type, and whether it may have no value."""

    accepts: Callable[[int], frozenset[int]]
    text: str
    optional: bool = False  # the operand may have lifetime NO_VALUE
    # accepts() of every HAL operand type, computed once: the primary type is always one of them when it is asked.
    accepted: dict[int, frozenset[int]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "accepted", {int(t): self.accepts(t) for t in _T})


@dataclass(frozen=True)
class Many:
    """A slot repeated at least `minimum` times (the rest of the list is fixed around it)."""

    slot: Slot
    minimum: int


Entry = Slot | Many


@dataclass(frozen=True)
class Form:
    """One calling convention of an operation."""

    inputs: tuple[Entry, ...]
    outputs: tuple[Entry, ...]
    more_inputs: tuple[tuple[Slot, ...], ...] = ()  # optional trailing groups, appended in order
    more_outputs: tuple[tuple[Slot, ...], ...] = ()


@dataclass(frozen=True)
class OpSpec:
    """What an operation accepts: primary types, where the primary operand is, and its forms."""

    types: frozenset[int]
    forms: tuple[Form, ...]
    primary_is_output: bool = False
    primary_index: int = 0


def fixed(*types: int) -> Slot:
    """A slot accepting exactly these types whatever the primary type."""
    accepted = frozenset(types)
    return Slot(lambda _t: accepted, " or ".join(_T(t).name for t in types))


def by_primary(rule: Callable[[int], frozenset[int]], text: str) -> Slot:
    """A slot whose accepted types follow from the primary type."""
    return Slot(rule, text)


def opt(slot: Slot) -> Slot:
    """The same slot, allowed to have no value (lifetime NO_VALUE)."""
    return replace(slot, optional=True)


SAME = by_primary(lambda t: frozenset({t}), "the same type as {primary}")
I32 = fixed(_T.INT32)
BOOL = fixed(_T.BOOL)
INT32_TENSOR = fixed(TI32)
BOOL_TENSOR = fixed(TB8)
SUBGRAPH = fixed(_T.SUBGRAPH)
ANY_TENSOR = by_primary(lambda _t: ANY_TENSOR_TYPES, "any tensor type")
ANY_DATA = by_primary(lambda _t: ANY_DATA_TYPES, "any type but SUBGRAPH")
# FLOAT16 scalars go with TENSOR_FLOAT16; every other primary type takes FLOAT32 scalars.
FLOAT_SCALAR = by_primary(
    lambda t: frozenset({_T.FLOAT16 if t == F16 else _T.FLOAT32}), "FLOAT16 for TENSOR_FLOAT16, else FLOAT32"
)
# A scalar of the primary tensor's element kind: PAD_V2's pad value, FILL's value.
ELEMENT_SCALAR = by_primary(
    lambda t: frozenset({{F16: _T.FLOAT16, F32: _T.FLOAT32}.get(t, _T.INT32)}),
    "FLOAT16 / FLOAT32 for float tensors, else INT32",
)


def float_else(*types: int) -> Slot:
    """The primary type for float primaries, else one of `types` (the quantized counterpart)."""
    quantized = frozenset(types)
    names = " or ".join(_T(t).name for t in types)
    text = f"the input type if float, else {names}"
    return by_primary(lambda t: frozenset({t}) if t in FLOAT_TENSORS else quantized, text)


# Convolution bias: the input's type for floats, TENSOR_INT32 for quantized inputs.
BIAS = float_else(TI32)
# Convolution filter: the input's type, or per-channel symmetric for asymmetric quantized inputs.
FILTER = by_primary(
    lambda t: frozenset({t, QPC} if t in (Q8, Q8S) else {t}), "the input type (or per-channel for quantized inputs)"
)
# Box coordinates next to quantized scores are TENSOR_QUANT16_ASYMM, anchors TENSOR_QUANT16_SYMM.
BOXES = float_else(Q16A)
ANCHORS = float_else(Q16S)
BBOX_DELTAS = float_else(Q8, Q8S)
_CASTABLE = frozenset({F16, F32, TI32, Q8})
CAST_OUTPUT = by_primary(
    lambda t: _CASTABLE if t in _CASTABLE else frozenset({t}), "FLOAT16/FLOAT32/INT32/QUANT8_ASYMM, or the input type"
)


def _unary(types: frozenset[int]) -> OpSpec:
    return OpSpec(types, (Form((SAME,), (SAME,)),))


def _binary(types: frozenset[int], out: Slot = SAME) -> OpSpec:
    return OpSpec(types, (Form((SAME, SAME), (out,)),))


def _with_activation(types: frozenset[int]) -> OpSpec:
    return OpSpec(types, (Form((SAME, SAME, I32), (SAME,)),))


def _pool(types: frozenset[int]) -> OpSpec:
    explicit = Form((SAME,) + (I32,) * 9, (SAME,), more_inputs=((BOOL,),))
    implicit = Form((SAME,) + (I32,) * 6, (SAME,), more_inputs=((BOOL,),))
    return OpSpec(types, (explicit, implicit))


def _conv(types: frozenset[int], explicit_scalars: int, implicit_scalars: int) -> OpSpec:
    # CONV_2D and DEPTHWISE_CONV_2D: an optional layout, then an optional pair of dilation factors.
    more = ((BOOL,), (I32, I32))
    head = (SAME, FILTER, BIAS)
    return OpSpec(
        types,
        (
            Form(head + (I32,) * explicit_scalars, (SAME,), more_inputs=more),
            Form(head + (I32,) * implicit_scalars, (SAME,), more_inputs=more),
        ),
    )


def _reduce(types: frozenset[int]) -> OpSpec:
    return OpSpec(types, (Form((SAME, INT32_TENSOR, BOOL), (SAME,)),))


def _resize(shape_inputs: tuple[Slot, ...], more: tuple[tuple[Slot, ...], ...]) -> OpSpec:
    # By output size (two INT32) or by scale factors (two float scalars).
    by_size = Form((SAME, I32, I32) + shape_inputs, (SAME,), more_inputs=more)
    by_scale = Form((SAME, FLOAT_SCALAR, FLOAT_SCALAR) + shape_inputs, (SAME,), more_inputs=more)
    return OpSpec(FQ, (by_size, by_scale))


def _lstm_weights(optional_positions: Sequence[int], count: int, slot: Slot = SAME) -> tuple[Slot, ...]:
    return tuple(opt(slot) if i in optional_positions else slot for i in range(count))


# LSTM-family optional inputs (cell-to-gate peepholes, CIFG, projection) in the 1.0 numbering.
_LSTM_OPTIONAL = (1, 5, 9, 10, 11, 12, 16, 17)
_LSTM_CORE = _lstm_weights(_LSTM_OPTIONAL, 20)  # inputs 0..19: x, 16 weights/biases, h, c
_LAYER_NORM = (opt(SAME),) * 4

_BIDI_LSTM_OPTIONAL = (
    1, 5, 9, 10, 11, 12, 16, 17,  # forward weights
    18, 22, 26, 27, 28, 29, 33, 34,  # backward weights
    39, 40, 41, 42, 43, 44, 45, 46, 47,  # auxiliary input and weights
)  # fmt: skip

_QLSTM_OPTIONAL = {1, 5, 9, 10, 11, 12, 16, 17, 20, 21, 22, 23, 24, 25}
_QLSTM_TYPES = (
    (Q8S,) + (Q8SYMM,) * 8 + (Q16S,) * 3 + (TI32,) * 4 + (Q8SYMM, TI32, Q8S, Q16S) + (Q16S,) * 4
    + (_T.FLOAT32,) * 6 + (_T.INT32, _T.FLOAT32)
)  # fmt: skip


def _qlstm_inputs() -> tuple[Slot, ...]:
    slots = [SAME] + [fixed(t) for t in _QLSTM_TYPES[1:]]
    return tuple(opt(s) if i in _QLSTM_OPTIONAL else s for i, s in enumerate(slots))


_O = OperationType

SIGNATURES: dict[int, OpSpec] = {
    _O.ADD: _with_activation(FQI),
    _O.AVERAGE_POOL_2D: _pool(FQ),
    _O.CONCATENATION: OpSpec(FQ, (Form((Many(SAME, 1), I32), (SAME,)),)),
    _O.CONV_2D: _conv(FQ, 7, 4),
    _O.DEPTHWISE_CONV_2D: _conv(FQ, 8, 5),
    _O.DEPTH_TO_SPACE: OpSpec(FQ, (Form((SAME, I32), (SAME,), more_inputs=((BOOL,),)),)),
    _O.DEQUANTIZE: OpSpec(frozenset({Q8, Q8S, Q8SYMM, QPC}), (Form((SAME,), (fixed(F16, F32),)),)),
    _O.EMBEDDING_LOOKUP: OpSpec(FQI, (Form((INT32_TENSOR, SAME), (SAME,)),), primary_index=1),
    _O.FLOOR: _unary(FLOATS),
    _O.FULLY_CONNECTED: OpSpec(FQ, (Form((SAME, SAME, BIAS, I32), (SAME,)),)),
    _O.HASHTABLE_LOOKUP: OpSpec(
        frozenset({F32, TI32, Q8}), (Form((INT32_TENSOR, INT32_TENSOR, SAME), (SAME, fixed(Q8))),), primary_index=2
    ),
    _O.L2_NORMALIZATION: OpSpec(FQ, (Form((SAME,), (SAME,), more_inputs=((I32,),)),)),
    _O.L2_POOL_2D: _pool(FLOATS),
    _O.LOCAL_RESPONSE_NORMALIZATION: OpSpec(
        FLOATS, (Form((SAME, I32, FLOAT_SCALAR, FLOAT_SCALAR, FLOAT_SCALAR), (SAME,), more_inputs=((I32,),)),)
    ),
    _O.LOGISTIC: _unary(FQ),
    _O.LSH_PROJECTION: OpSpec(FLOATS, (Form((SAME, ANY_TENSOR, opt(SAME), I32), (INT32_TENSOR,)),)),
    _O.LSTM: OpSpec(
        FLOATS,
        (Form(_LSTM_CORE + (I32, FLOAT_SCALAR, FLOAT_SCALAR), (SAME,) * 4, more_inputs=(_LAYER_NORM,)),),
    ),
    _O.MAX_POOL_2D: _pool(FQ),
    _O.MUL: _with_activation(FQI),
    _O.RELU: _unary(FQ),
    _O.RELU1: _unary(FQ),
    _O.RELU6: _unary(FQ),
    _O.RESHAPE: OpSpec(FQ, (Form((SAME, INT32_TENSOR), (SAME,)),)),
    _O.RESIZE_BILINEAR: _resize((), ((BOOL,), (BOOL,), (BOOL,))),
    _O.RNN: OpSpec(FLOATS, (Form((SAME,) * 5 + (I32,), (SAME, SAME)),)),
    _O.SOFTMAX: OpSpec(FQ, (Form((SAME, FLOAT_SCALAR), (SAME,), more_inputs=((I32,),)),)),
    _O.SPACE_TO_DEPTH: OpSpec(FQ, (Form((SAME, I32), (SAME,), more_inputs=((BOOL,),)),)),
    _O.SVDF: OpSpec(FLOATS, (Form((SAME, SAME, SAME, opt(SAME), SAME, I32, I32), (SAME, SAME)),)),
    _O.TANH: _unary(FQ),
    _O.BATCH_TO_SPACE_ND: OpSpec(FQ, (Form((SAME, INT32_TENSOR), (SAME,), more_inputs=((BOOL,),)),)),
    _O.DIV: _with_activation(frozenset({F16, F32, TI32})),
    _O.MEAN: OpSpec(FQ, (Form((SAME, INT32_TENSOR, I32), (SAME,)),)),
    _O.PAD: OpSpec(FQ, (Form((SAME, INT32_TENSOR), (SAME,)),)),
    _O.SPACE_TO_BATCH_ND: OpSpec(
        FQ, (Form((SAME, INT32_TENSOR, INT32_TENSOR), (SAME,), more_inputs=((BOOL,),)),)
    ),
    # The squeeze axes and the permutation are optional: present as operands, possibly without a value.
    _O.SQUEEZE: OpSpec(FQ, (Form((SAME, opt(INT32_TENSOR)), (SAME,)),)),
    _O.STRIDED_SLICE: OpSpec(FQ, (Form((SAME,) + (INT32_TENSOR,) * 3 + (I32,) * 3, (SAME,)),)),
    _O.SUB: _with_activation(FQI),
    _O.TRANSPOSE: OpSpec(FQ, (Form((SAME, opt(INT32_TENSOR)), (SAME,)),)),
    _O.ABS: _unary(frozenset({F16, F32, TI32})),
    _O.ARGMAX: OpSpec(FQI, (Form((SAME, I32), (INT32_TENSOR,)),)),
    _O.ARGMIN: OpSpec(FQI, (Form((SAME, I32), (INT32_TENSOR,)),)),
    _O.AXIS_ALIGNED_BBOX_TRANSFORM: OpSpec(
        frozenset({F16, F32, Q16A}), (Form((SAME, BBOX_DELTAS, INT32_TENSOR, SAME), (SAME,)),)
    ),
    _O.BIDIRECTIONAL_SEQUENCE_LSTM: OpSpec(
        FLOATS,
        (
            Form(
                _lstm_weights(_BIDI_LSTM_OPTIONAL, 48) + (I32, FLOAT_SCALAR, FLOAT_SCALAR, BOOL, BOOL),
                (SAME,),
                more_inputs=((opt(SAME),) * 8,),
                # merged or separate outputs, then (since 1.3) the four final states
                more_outputs=((SAME,), (SAME,) * 3, (SAME,)),
            ),
        ),
    ),
    _O.BIDIRECTIONAL_SEQUENCE_RNN: OpSpec(
        FLOATS,
        (
            Form(
                (SAME,) * 9 + (opt(SAME),) * 3 + (I32, BOOL, BOOL),
                (SAME,),
                more_outputs=((SAME,), (SAME,), (SAME,)),
            ),
        ),
    ),
    _O.BOX_WITH_NMS_LIMIT: OpSpec(
        FQ,
        (
            Form(
                (SAME, BOXES, INT32_TENSOR, FLOAT_SCALAR, I32, I32, FLOAT_SCALAR, FLOAT_SCALAR, FLOAT_SCALAR),
                (SAME, BOXES, INT32_TENSOR, INT32_TENSOR),
            ),
        ),
    ),
    _O.CAST: OpSpec(_CASTABLE | {TB8, Q16A, Q16S, Q8S, Q8SYMM}, (Form((SAME,), (CAST_OUTPUT,)),)),
    _O.CHANNEL_SHUFFLE: OpSpec(FQ, (Form((SAME, I32, I32), (SAME,)),)),
    _O.DETECTION_POSTPROCESSING: OpSpec(
        FLOATS,
        (
            Form(
                (SAME, SAME, SAME) + (FLOAT_SCALAR,) * 4 + (BOOL, I32, I32, I32, FLOAT_SCALAR, FLOAT_SCALAR, BOOL),
                (SAME, SAME, INT32_TENSOR, INT32_TENSOR),
            ),
        ),
    ),
    _O.EQUAL: _binary(COMPARABLE, BOOL_TENSOR),
    _O.EXP: _unary(FLOATS),
    _O.EXPAND_DIMS: OpSpec(FQI, (Form((SAME, I32), (SAME,)),)),
    _O.GATHER: OpSpec(FQI, (Form((SAME, I32, INT32_TENSOR), (SAME,)),)),
    _O.GENERATE_PROPOSALS: OpSpec(
        FQ,
        (
            Form(
                (SAME, SAME, ANCHORS, BOXES, FLOAT_SCALAR, FLOAT_SCALAR, I32, I32, FLOAT_SCALAR, FLOAT_SCALAR, BOOL),
                (SAME, BOXES, INT32_TENSOR),
            ),
        ),
    ),
    _O.GREATER: _binary(COMPARABLE, BOOL_TENSOR),
    _O.GREATER_EQUAL: _binary(COMPARABLE, BOOL_TENSOR),
    _O.GROUPED_CONV_2D: OpSpec(
        FQ,
        (
            Form((SAME, FILTER, BIAS) + (I32,) * 8 + (BOOL,), (SAME,)),
            Form((SAME, FILTER, BIAS) + (I32,) * 5 + (BOOL,), (SAME,)),
        ),
    ),
    _O.HEATMAP_MAX_KEYPOINT: OpSpec(FQ, (Form((SAME, BOXES, BOOL), (SAME, BOXES)),)),
    _O.INSTANCE_NORMALIZATION: OpSpec(FLOATS, (Form((SAME, FLOAT_SCALAR, FLOAT_SCALAR, FLOAT_SCALAR, BOOL), (SAME,)),)),
    _O.LESS: _binary(COMPARABLE, BOOL_TENSOR),
    _O.LESS_EQUAL: _binary(COMPARABLE, BOOL_TENSOR),
    _O.LOG: _unary(FLOATS),
    _O.LOGICAL_AND: _binary(frozenset({TB8})),
    _O.LOGICAL_NOT: _unary(frozenset({TB8})),
    _O.LOGICAL_OR: _binary(frozenset({TB8})),
    _O.LOG_SOFTMAX: OpSpec(FLOATS, (Form((SAME, FLOAT_SCALAR, I32), (SAME,)),)),
    _O.MAXIMUM: _binary(FQI),
    _O.MINIMUM: _binary(FQI),
    _O.NEG: _unary(frozenset({F16, F32, TI32})),
    _O.NOT_EQUAL: _binary(COMPARABLE, BOOL_TENSOR),
    _O.PAD_V2: OpSpec(FQ, (Form((SAME, INT32_TENSOR, ELEMENT_SCALAR), (SAME,)),)),
    _O.POW: _binary(FLOATS),
    _O.PRELU: _binary(FQ),
    _O.QUANTIZE: OpSpec(FLOATS, (Form((SAME,), (fixed(Q8, Q8S),)),)),
    _O.QUANTIZED_16BIT_LSTM: OpSpec(
        frozenset({Q8}),
        (Form((SAME,) + (fixed(Q8),) * 8 + (INT32_TENSOR,) * 4 + (fixed(Q16S), fixed(Q8)), (fixed(Q16S), fixed(Q8))),),
    ),
    _O.RANDOM_MULTINOMIAL: OpSpec(FLOATS, (Form((SAME, I32, INT32_TENSOR), (INT32_TENSOR,)),)),
    _O.REDUCE_ALL: _reduce(frozenset({TB8})),
    _O.REDUCE_ANY: _reduce(frozenset({TB8})),
    _O.REDUCE_MAX: _reduce(FQ),
    _O.REDUCE_MIN: _reduce(FQ),
    _O.REDUCE_PROD: _reduce(FLOATS),
    _O.REDUCE_SUM: _reduce(FLOATS),
    _O.ROI_ALIGN: OpSpec(
        FQ,
        (Form((SAME, BOXES, INT32_TENSOR, I32, I32, FLOAT_SCALAR, FLOAT_SCALAR, I32, I32, BOOL), (SAME,)),),
    ),
    _O.ROI_POOLING: OpSpec(
        FQ, (Form((SAME, BOXES, INT32_TENSOR, I32, I32, FLOAT_SCALAR, FLOAT_SCALAR, BOOL), (SAME,)),)
    ),
    _O.RSQRT: _unary(FLOATS),
    _O.SELECT: OpSpec(FQI, (Form((BOOL_TENSOR, SAME, SAME), (SAME,)),), primary_index=1),
    _O.SIN: _unary(FLOATS),
    _O.SLICE: OpSpec(FQI, (Form((SAME, INT32_TENSOR, INT32_TENSOR), (SAME,)),)),
    _O.SPLIT: OpSpec(FQI, (Form((SAME, I32, I32), (Many(SAME, 1),)),)),
    _O.SQRT: _unary(FLOATS),
    _O.TILE: OpSpec(FQI, (Form((SAME, INT32_TENSOR), (SAME,)),)),
    _O.TOPK_V2: OpSpec(FQI, (Form((SAME, I32), (SAME, INT32_TENSOR)),)),
    _O.TRANSPOSE_CONV_2D: OpSpec(
        FQ,
        (
            Form((SAME, FILTER, BIAS) + (I32,) * 7 + (BOOL,), (SAME,)),
            Form((SAME, FILTER, BIAS, INT32_TENSOR) + (I32,) * 4 + (BOOL,), (SAME,)),
        ),
    ),
    _O.UNIDIRECTIONAL_SEQUENCE_LSTM: OpSpec(
        FLOATS,
        (
            Form(
                _LSTM_CORE + (I32, FLOAT_SCALAR, FLOAT_SCALAR, BOOL),
                (SAME,),
                more_inputs=(_LAYER_NORM,),
                more_outputs=((SAME, SAME),),
            ),
        ),
    ),
    _O.UNIDIRECTIONAL_SEQUENCE_RNN: OpSpec(
        FLOATS, (Form((SAME,) * 5 + (I32, I32), (SAME,), more_outputs=((SAME,),)),)
    ),
    _O.RESIZE_NEAREST_NEIGHBOR: _resize((BOOL,), ((BOOL,), (BOOL,))),
    _O.QUANTIZED_LSTM: OpSpec(frozenset({Q8S}), (Form(_qlstm_inputs(), (fixed(Q8S), fixed(Q16S), fixed(Q8S))),)),
    # IF: condition, then-branch, else-branch, then the branch inputs; WHILE: condition, body, then the
    # loop operands. Their agreement with the referenced subgraphs is checked in control_flow.py.
    _O.IF: OpSpec(
        frozenset({TB8}), (Form((BOOL_TENSOR, SUBGRAPH, SUBGRAPH, Many(ANY_DATA, 0)), (Many(ANY_DATA, 1),)),)
    ),
    _O.WHILE: OpSpec(
        frozenset({_T.SUBGRAPH}), (Form((SUBGRAPH, SUBGRAPH, Many(ANY_DATA, 1)), (Many(ANY_DATA, 1),)),)
    ),
    _O.ELU: OpSpec(FLOATS, (Form((SAME, FLOAT_SCALAR), (SAME,)),)),
    _O.HARD_SWISH: _unary(FQ),
    # FILL's primary type is its output's: the input is the shape, the value scalar follows the output.
    _O.FILL: OpSpec(
        frozenset({F16, F32, TI32}), (Form((INT32_TENSOR, ELEMENT_SCALAR), (SAME,)),), primary_is_output=True
    ),
    _O.RANK: OpSpec(ANY_TENSOR_TYPES, (Form((SAME,), (fixed(_T.INT32),)),)),
}

assert len(SIGNATURES) == 102, "every HAL 1.3 operation 0..101 has a signature"
assert set(SIGNATURES) == set(range(102))


def _expand(entries: tuple[Entry, ...], count: int) -> list[Slot] | None:
    """The list's slots for `count` operands, or None if the list cannot have that many."""
    many = [i for i, e in enumerate(entries) if isinstance(e, Many)]
    if not many:
        return list(entries) if len(entries) == count else None  # type: ignore[arg-type]
    i = many[0]
    repeated = count - (len(entries) - 1)
    rep = entries[i]
    assert isinstance(rep, Many)
    if repeated < rep.minimum:
        return None
    return [*entries[:i], *([rep.slot] * repeated), *entries[i + 1 :]]  # type: ignore[list-item]


def _with_groups(
    entries: tuple[Entry, ...], groups: tuple[tuple[Slot, ...], ...], count: int
) -> list[Slot] | None:
    """Slots for `count` operands: the base list, then as many optional groups as make up the count."""
    base = _expand(entries, count)
    if base is not None or not groups:
        return base
    slots: list[Slot] = list(entries)  # type: ignore[arg-type]
    for group in groups:
        slots.extend(group)
        if len(slots) == count:
            return slots
        if len(slots) > count:
            return None
    return None


def _possible_counts(entries: tuple[Entry, ...], groups: tuple[tuple[Slot, ...], ...]) -> str:
    if any(isinstance(e, Many) for e in entries):
        fixed_part = len(entries) - 1
        minimum = next(e.minimum for e in entries if isinstance(e, Many))
        return f"at least {fixed_part + minimum}"
    counts = [len(entries)]
    for g in groups:
        counts.append(counts[-1] + len(g))
    return "/".join(str(c) for c in counts)


def _type_name(t: int) -> str:
    if t.__class__ is int or t.__class__ is _T:
        return _TYPE_NAMES.get(t) or str(t)
    try:
        return _T(t).name
    except ValueError:
        return str(t)


def _check_slots(
    what: object, side: str, operands: Sequence[Operand], slots: Sequence[Slot], primary: int, primary_at: str
) -> DriverError | None:
    for k, (operand, slot) in enumerate(zip(operands, slots)):
        accepted = slot.accepted[primary]
        if operand.type not in accepted:
            names = ", ".join(sorted(_type_name(t) for t in accepted))
            return invalid(
                f"{what} {side} {k} has type {_type_name(operand.type)}; expected "
                f"{slot.text.format(primary=primary_at)} ({names})",
                "V10.operand_type_for_operation",
            )
        if operand.lifetime == _NO_VALUE and not slot.optional:
            return invalid(f"{what} {side} {k} is required but has no value (NO_VALUE)", "V6.no_value_not_optional")
    return None


@lru_cache(maxsize=4096)
def _fitting_forms(
    op_type: int, n_inputs: int, n_outputs: int
) -> tuple[tuple[Form, ...], tuple[tuple[list[Slot], list[Slot]], ...]]:
    """The forms of an operation that take this many inputs, and the (input, output) slots of those that also
    produce this many outputs (a function of the table alone, so it is computed once per operation and counts)."""
    spec = SIGNATURES[op_type]
    by_inputs = []
    for form in spec.forms:
        slots = _with_groups(form.inputs, form.more_inputs, n_inputs)
        if slots is not None:
            by_inputs.append((form, slots))
    candidates = []
    for form, in_slots in by_inputs:
        out_slots = _with_groups(form.outputs, form.more_outputs, n_outputs)
        if out_slots is not None:
            candidates.append((in_slots, out_slots))
    return tuple(f for f, _ in by_inputs), tuple(candidates)


def check_signature(op_type: int, inputs: Sequence[Operand], outputs: Sequence[Operand], what: object) -> None:
    """Raise INVALID_ARGUMENT if the operation's operand counts, types or omitted values break its signature.

    `inputs`/`outputs` are the operation's operands in order; `what` names the operation in messages (anything
    that formats as text). Operations without a table entry (OEM and extension operations) are not checked here.
    """
    spec = SIGNATURES.get(op_type)
    if spec is None:
        return
    by_inputs, candidates = _fitting_forms(op_type, len(inputs), len(outputs))
    if not by_inputs:
        expected = " or ".join(_possible_counts(f.inputs, f.more_inputs) for f in spec.forms)
        raise invalid(f"{what} has {len(inputs)} inputs; expected {expected}", "V17.operation_input_count")
    if not candidates:
        expected = " or ".join(sorted({_possible_counts(f.outputs, f.more_outputs) for f in by_inputs}))
        raise invalid(f"{what} has {len(outputs)} outputs; expected {expected}", "V18.operation_output_count")
    side, operands = ("output", outputs) if spec.primary_is_output else ("input", inputs)
    primary = operands[spec.primary_index].type
    if primary not in spec.types:
        names = ", ".join(sorted(_type_name(t) for t in spec.types))
        raise invalid(
            f"{what} {side} {spec.primary_index} has type {_type_name(primary)}; the operation accepts {names}",
            "V10.operand_type_for_operation",
        )
    first_error: DriverError | None = None
    for in_slots, out_slots in candidates:
        primary_at = f"{side} {spec.primary_index}"
        error = _check_slots(what, "input", inputs, in_slots, primary, primary_at) or _check_slots(
            what, "output", outputs, out_slots, primary, primary_at
        )
        if error is None:
            return
        first_error = first_error or error
    assert first_error is not None
    try:
        raise first_error
    finally:
        # Raised from a local, the error would hold this frame (in its traceback) that holds it: a reference
        # cycle, keeping the model alive until the cycle collector runs.
        first_error = error = None


# Per candidate form: the types each input accepts and whether it must have a value, then the same for outputs.
_Typing = tuple[tuple[frozenset[int], ...], tuple[bool, ...], tuple[frozenset[int], ...], tuple[bool, ...]]


@lru_cache(maxsize=4096)
def _typings(op_type: int, n_inputs: int, n_outputs: int, primary: int) -> tuple[_Typing, ...]:
    """The typing of each form that fits these counts, for this primary type (none if the operation refuses it)."""
    if primary not in SIGNATURES[op_type].types:
        return ()
    return tuple(
        (
            tuple(slot.accepted[primary] for slot in in_slots),
            tuple(not slot.optional for slot in in_slots),
            tuple(slot.accepted[primary] for slot in out_slots),
            tuple(not slot.optional for slot in out_slots),
        )
        for in_slots, out_slots in _fitting_forms(op_type, n_inputs, n_outputs)[1]
    )


@lru_cache(maxsize=4096)
def types_fit(
    op_type: int, input_types: tuple[int, ...], output_types: tuple[int, ...], valued: tuple[bool, ...] | None = None
) -> bool:
    """True when check_signature accepts an operation with operands of these types, decided without a message.

    An operation of a SIGNATURES type, whose operands passed the operand checks with int (or OperandType) types.
    `valued` tells, inputs then outputs, which operands have a value (None: all of them). The answer depends on
    nothing else, so it is remembered; False leaves it to check_signature to name the problem.
    """
    spec = SIGNATURES[op_type]
    types = output_types if spec.primary_is_output else input_types
    if len(types) <= spec.primary_index:
        return False
    for in_types, in_required, out_types, out_required in _typings(
        op_type, len(input_types), len(output_types), types[spec.primary_index]
    ):
        if not all(map(frozenset.__contains__, in_types, input_types)):
            continue
        if not all(map(frozenset.__contains__, out_types, output_types)):
            continue
        if valued is None or all(v or not r for v, r in zip(valued, in_required + out_required)):
            return True
    return False
