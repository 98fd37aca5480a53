"""LiteRT's kernel limits (rules/_limits.py): for each, a model just beyond it, whose translation the bare engine
refuses before computing on the kernel sets the limit names and runs on the others (so the limit is real and its
kernel sets right), and which the driver declares unsupported; and a model at its edge, which stays supported and
runs on every kernel set, matching the reference.

The translation beyond a limit is built without the support check (the rules' emit path, as `translate` runs it
once every check passed). Scales sit on adjacent float32 values where the limit is a threshold (with the first
value LiteRT accepts in between where the reference cannot judge it), so a check that refused one value more, or
one less, fails here. Beyond an XNNPACK limit, operators the delegate leaves to the builtin kernel stay supported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pytest

import driver_under_test
from driver_under_test.backends.litert import KernelSet, LiteRTProgram, translate
from driver_under_test.backends.litert._translate import Translation
from harness.hal import DataLocation, ErrorStatus, Model, Operand, Operation, Subgraph
from harness.hal import OperandLifeTime as L
from harness.hal import OperationType as O
from tests.driver.backends.litert.build import Build, T, check_against_reference
from tests.driver.backends.litert.cases import constant_reader, model_reason

QS8, Q8 = T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_ASYMM
K = KernelSet
EVERY = frozenset(KernelSet)
BUILTIN = frozenset({K.OPTIMIZED, K.REFERENCE})
XNNPACK = frozenset({K.XNNPACK})
RELU1, RELU6 = 2, 3
VALID = 2  # the HAL's implicit padding scheme

Case = tuple[Model, list[np.ndarray]]


def above(value: float) -> float:
    """The next float32 above `value`."""
    return float(np.nextafter(np.float32(value), np.float32(np.inf)))


def below(value: float) -> float:
    """The next float32 below `value`."""
    return float(np.nextafter(np.float32(value), np.float32(0)))


def stored(t: int, zero_point: int, deltas) -> np.ndarray:
    """Stored values zero_point + deltas in the storage dtype of t."""
    dtype = np.uint8 if t == Q8 else np.int8
    return (np.asarray(deltas) + zero_point).astype(dtype)


# ---- builders ----


def hard_swish(t: int, out_scale: float) -> Case:
    """HARD_SWISH with input scale 2^-10 (its multiplier is (2^-10 / 128) / out_scale)."""
    zp = 128 if t == Q8 else 0
    b = Build()
    x = b.input(t, [1, 5], 2.0**-10, zp)
    out = b.output(t, [1, 5], out_scale, zp)
    b.op(O.HARD_SWISH, [x], [out])
    return b.model(), [stored(t, zp, [[-2, -1, 0, 1, 2]])]


def elementwise(kind: O, t: int, scale: float, act: int) -> Case:
    """ADD/SUB/MUL of two [2, 3] inputs, all of one scale and zero point 0, with a fused activation."""
    b = Build()
    x, y = b.input(t, [2, 3], scale, 0), b.input(t, [2, 3], scale, 0)
    out = b.output(t, [2, 3], scale, 0)
    b.op(kind, [x, y, b.i32(act)], [out])
    return b.model(), [stored(t, 0, [[-3, -1, 0], [1, 2, 5]]), stored(t, 0, [[1, 1, 1], [-1, 0, 2]])]


def average_pool(scale: float) -> Case:
    """A uint8 2x2 AVERAGE_POOL_2D (VALID) with RELU6, input and output of one scale and zero point 0."""
    b = Build()
    x = b.input(Q8, [1, 2, 3, 1], scale, 0)
    out = b.output(Q8, [1, 1, 2, 1], scale, 0)
    b.op(O.AVERAGE_POOL_2D, [x, b.i32(VALID), b.i32(1), b.i32(1), b.i32(2), b.i32(2), b.i32(RELU6)], [out])
    return b.model(), [np.array([2, 4, 6, 8, 10, 12], np.uint8).reshape(1, 2, 3, 1)]


@dataclass(frozen=True)
class Weights:
    """Quantization of a weighted operation: input, filter and output scales, the filter's zero point, the bias
    scale (None: input * filter), whether filter and bias are model inputs rather than constants."""

    input: float = 0.5
    filter: float = 0.5
    output: float = 1.0
    filter_zero_point: int = 0
    bias: float | None = None
    runtime: bool = False
    act: int = 0


def _weights(b: Build, t: int, shape: tuple[int, ...], w: Weights, units: int) -> tuple[int, int, list[np.ndarray]]:
    """Filter and bias operands (constants, or model inputs with their values)."""
    pattern = np.resize(np.array([1, 0, -1, 1, 1, 0], np.int64), int(np.prod(shape))).reshape(shape)
    filter_value = stored(t, w.filter_zero_point, pattern)
    bias_scale = w.bias if w.bias is not None else float(np.float32(w.input) * np.float32(w.filter))
    bias_value = np.arange(units, dtype=np.int32) - 1
    if w.runtime:
        weights = b.input(t, list(shape), w.filter, w.filter_zero_point)
        bias = b.input(T.TENSOR_INT32, [units], bias_scale, 0)
        return weights, bias, [filter_value, bias_value]
    weights = b.const(t, filter_value, w.filter, w.filter_zero_point)
    return weights, b.const(T.TENSOR_INT32, bias_value, bias_scale, 0), []


def fully_connected(t: int, w: Weights) -> Case:
    """FULLY_CONNECTED: input [2, 4], weights [3, 4], bias [3]."""
    zp = 128 if t == Q8 else 0
    b = Build()
    x = b.input(t, [2, 4], w.input, zp)
    weights, bias, extra = _weights(b, t, (3, 4), w, 3)
    out = b.output(t, [2, 3], w.output, zp)
    b.op(O.FULLY_CONNECTED, [x, weights, bias, b.i32(w.act)], [out])
    return b.model(), [stored(t, zp, [[1, -2, 0, 3], [-1, 1, 2, 0]]), *extra]


def convolution(kind: O, t: int, w: Weights) -> Case:
    """CONV_2D, DEPTHWISE_CONV_2D (multiplier 1), GROUPED_CONV_2D (2 groups) or TRANSPOSE_CONV_2D over an input
    [1, 3, 3, 2], 2x2 filters, VALID padding, strides 1."""
    zp = 128 if t == Q8 else 0
    shapes = {
        O.CONV_2D: ((2, 2, 2, 2), [1, 2, 2, 2]),
        O.DEPTHWISE_CONV_2D: ((1, 2, 2, 2), [1, 2, 2, 2]),
        O.GROUPED_CONV_2D: ((2, 2, 2, 1), [1, 2, 2, 2]),
        O.TRANSPOSE_CONV_2D: ((2, 2, 2, 2), [1, 4, 4, 2]),
    }
    filter_shape, out_dims = shapes[kind]
    b = Build()
    x = b.input(t, [1, 3, 3, 2], w.input, zp)
    weights, bias, extra = _weights(b, t, filter_shape, w, 2)
    out = b.output(t, out_dims, w.output, zp)
    window = [b.i32(VALID), b.i32(1), b.i32(1)]
    if kind == O.TRANSPOSE_CONV_2D:
        shape = b.const(T.TENSOR_INT32, out_dims)
        inputs = [x, weights, bias, shape, *window, b.i32(w.act), b.const(T.BOOL, False)]
    elif kind == O.GROUPED_CONV_2D:
        inputs = [x, weights, bias, *window, b.i32(2), b.i32(w.act), b.const(T.BOOL, False)]
    elif kind == O.DEPTHWISE_CONV_2D:
        inputs = [x, weights, bias, *window, b.i32(1), b.i32(w.act)]
    else:
        inputs = [x, weights, bias, *window, b.i32(w.act)]
    b.op(kind, inputs, [out])
    deltas = np.resize(np.array([2, -1, 0, 1, -2, 1, 0, 0, 1]), 18).reshape(1, 3, 3, 2)
    return b.model(), [stored(t, zp, deltas), *extra]


# ---- the limits ----


@dataclass(frozen=True)
class Limit:
    """One limit: models beyond it and at its edge, the kernel sets that refuse the one beyond, the words of the
    engine's refusal and of the driver's reason."""

    name: str
    beyond: Callable[[], Case]
    edge: Callable[[], Case]
    refusing: frozenset[KernelSet]
    engine: str
    reason: str
    # The first value Prepare accepts, when it is not the edge: there LiteRT computes wrong values (see
    # test_a_fused_activation_bound_of_exactly_two_to_the_31_clamps_nothing), so the edge the reference judges is
    # one float32 further.
    threshold: Callable[[], Case] | None = None


# A fused RELU6 bound quantized with scale 3 * 2^-30 is exactly 2^31, the largest LiteRT lets through; RELU1's
# with 2^-31. One float32 below, the quotient rounds above 2^31.
RELU6_EDGE, RELU1_EDGE = 3 * 2.0**-30, 2.0**-31
# |1 * 1 - (1 + 2^-23)| / output scale is at most 0.02 from this output scale up.
BIAS_EDGE = 2.0**-23 / 0.02
# Weights given at run time keep the XNNPACK delegate away, so all three kernel sets run the builtin kernel (the
# bias-scale limit needs a multiplier input * filter / output far above 256, which XNNPACK would refuse first).
BIAS_BEYOND = Weights(input=1.0, filter=1.0, output=below(BIAS_EDGE), bias=above(1.0), runtime=True)
BIAS_EDGE_W = Weights(input=1.0, filter=1.0, output=float(np.float32(BIAS_EDGE)), bias=above(1.0), runtime=True)
FC_RELU6 = Weights(input=2.0**-15, filter=2.0**-14, act=RELU6, runtime=True)

LIMITS = [
    Limit(
        "hard_swish_int8",
        lambda: hard_swish(QS8, 2.0**-17),
        lambda: hard_swish(QS8, above(2.0**-17)),
        EVERY,
        "output_multiplier_exponent",
        "HardSwishPrepare",
    ),
    Limit(
        "hard_swish_uint8",
        lambda: hard_swish(Q8, 2.0**-17),
        lambda: hard_swish(Q8, above(2.0**-17)),
        EVERY,
        "output_multiplier_exponent",
        "HardSwishPrepare",
    ),
    Limit(
        "conv_int8_filter_zero_point",
        lambda: convolution(O.CONV_2D, QS8, Weights(filter_zero_point=1)),
        lambda: convolution(O.CONV_2D, QS8, Weights()),
        EVERY,
        "zero_point|failed to delegate CONV_2D",
        "conv.cc",
    ),
    Limit(
        "grouped_conv_int8_filter_zero_point",
        lambda: convolution(O.GROUPED_CONV_2D, QS8, Weights(filter_zero_point=-3)),
        lambda: convolution(O.GROUPED_CONV_2D, QS8, Weights()),
        EVERY,
        "zero_point|failed to delegate CONV_2D",
        "conv.cc",
    ),
    Limit(
        "fully_connected_bias_scale",
        lambda: fully_connected(QS8, BIAS_BEYOND),
        lambda: fully_connected(QS8, BIAS_EDGE_W),
        EVERY,
        "scale_diff",
        "GetQuantizedConvolutionMultipler",
    ),
    Limit(
        "conv_uint8_bias_scale",
        lambda: convolution(O.CONV_2D, Q8, BIAS_BEYOND),
        lambda: convolution(O.CONV_2D, Q8, BIAS_EDGE_W),
        EVERY,
        "scale_diff",
        "GetQuantizedConvolutionMultipler",
    ),
    Limit(
        "add_relu6_range",
        lambda: elementwise(O.ADD, QS8, below(RELU6_EDGE), RELU6),
        lambda: elementwise(O.ADD, QS8, above(RELU6_EDGE), RELU6),
        BUILTIN,
        "no_integer_overflow_from_quantization",
        "CalculateActivationRangeQuantized",
        lambda: elementwise(O.ADD, QS8, RELU6_EDGE, RELU6),
    ),
    Limit(
        "sub_relu1_range",
        lambda: elementwise(O.SUB, Q8, below(RELU1_EDGE), RELU1),
        lambda: elementwise(O.SUB, Q8, above(RELU1_EDGE), RELU1),
        BUILTIN,
        "no_integer_overflow_from_quantization",
        "CalculateActivationRangeQuantized",
        lambda: elementwise(O.SUB, Q8, RELU1_EDGE, RELU1),
    ),
    Limit(
        "fully_connected_relu6_range",
        lambda: fully_connected(QS8, replace(FC_RELU6, output=below(RELU6_EDGE))),
        lambda: fully_connected(QS8, replace(FC_RELU6, output=above(RELU6_EDGE))),
        EVERY,
        "no_integer_overflow_from_quantization",
        "CalculateActivationRangeQuantized",
        lambda: fully_connected(QS8, replace(FC_RELU6, output=RELU6_EDGE)),
    ),
    Limit(
        "average_pool_uint8_relu6_range",
        lambda: average_pool(below(RELU6_EDGE)),
        lambda: average_pool(above(RELU6_EDGE)),
        EVERY,
        "no_integer_overflow_from_quantization",
        "AverageEvalQuantizedUint8",
        lambda: average_pool(RELU6_EDGE),
    ),
    *(
        Limit(
            f"xnnpack_requantization_{kind.name.lower()}",
            lambda kind=kind: convolution(kind, QS8, Weights(input=1.0, filter=256.0)),
            lambda kind=kind: convolution(kind, QS8, Weights(input=1.0, filter=below(256.0))),
            XNNPACK,
            "failed to create XNNPACK runtime",
            "requantization scale",
        )
        for kind in (O.CONV_2D, O.DEPTHWISE_CONV_2D, O.GROUPED_CONV_2D, O.TRANSPOSE_CONV_2D)
    ),
    Limit(
        "xnnpack_requantization_fully_connected",
        lambda: fully_connected(Q8, Weights(input=1.0, filter=256.0)),
        lambda: fully_connected(Q8, Weights(input=1.0, filter=below(256.0))),
        XNNPACK,
        "failed to create XNNPACK runtime",
        "requantization scale",
    ),
    Limit(
        "xnnpack_depthwise_int8_filter_zero_point",
        lambda: convolution(O.DEPTHWISE_CONV_2D, QS8, Weights(filter_zero_point=1)),
        lambda: convolution(O.DEPTHWISE_CONV_2D, QS8, Weights()),
        XNNPACK,
        "failed to delegate DEPTHWISE_CONV_2D",
        "XNNPACK's int8 DEPTHWISE_CONV_2D",
    ),
]

# Beyond an XNNPACK limit where the delegate does not take the operator: weights given at run time, or a
# per-tensor int8 fully connected filter whose zero point is not 0. Every kernel set runs these.
OUTSIDE_XNNPACK = {
    "conv_runtime_weights": lambda: convolution(O.CONV_2D, QS8, Weights(input=1.0, filter=256.0, runtime=True)),
    "depthwise_runtime_zero_point": lambda: convolution(
        O.DEPTHWISE_CONV_2D, QS8, Weights(filter_zero_point=1, runtime=True)
    ),
    "fully_connected_runtime_weights": lambda: fully_connected(QS8, Weights(input=1.0, filter=256.0, runtime=True)),
    "fully_connected_filter_zero_point": lambda: fully_connected(
        QS8, Weights(input=1.0, filter=256.0, filter_zero_point=2)
    ),
}


def in_if_branches(case: Case) -> Case:
    """The one-operation model of `case` as both branches of an IF whose condition is a model input (true)."""
    inner, inputs = case
    branch = inner.main
    operands = [
        Operand(T.TENSOR_BOOL8, [1], 1, lifetime=L.SUBGRAPH_INPUT),
        Operand(T.SUBGRAPH, [], 1, lifetime=L.SUBGRAPH, location=DataLocation(0, 0, 0)),
        Operand(T.SUBGRAPH, [], 1, lifetime=L.SUBGRAPH, location=DataLocation(0, 1, 0)),
    ]
    for index in branch.input_indexes:
        operands.append(replace(branch.operands[index], number_of_consumers=1))
    operands.append(replace(branch.operands[branch.output_indexes[0]], number_of_consumers=0))
    data = list(range(3, len(operands) - 1))
    main = Subgraph(operands, [Operation(O.IF, [0, 1, 2, *data], [len(operands) - 1])], [0, *data], [len(operands) - 1])
    model = Model(main=main, referenced=[branch, branch], operand_values=inner.operand_values)
    return model, [np.array([True]), *inputs]


def unchecked_flatbuffer(model: Model) -> bytes:
    """The flatbuffer the rules emit for a model, without the support check that translate runs first."""
    translation = Translation(model, constant_reader(model))
    translation.subgraph(0)
    return translation.builder.pack()


def run(flatbuffer: bytes, inputs: list[np.ndarray], kernel_set: KernelSet) -> list[np.ndarray]:
    """Allocate and invoke on one kernel set (a limit checked at every invoke shows only then)."""
    return LiteRTProgram(flatbuffer, kernel_set).run(inputs)


def _ids(limit: Limit) -> str:
    return limit.name


@pytest.mark.parametrize("kernel_set", list(KernelSet))
@pytest.mark.parametrize("limit", LIMITS, ids=_ids)
def test_the_engine_refuses_the_translation_beyond_the_limit(limit: Limit, kernel_set: KernelSet) -> None:
    model, inputs = limit.beyond()
    flatbuffer = unchecked_flatbuffer(model)
    if kernel_set in limit.refusing:
        with pytest.raises(RuntimeError, match=limit.engine):
            run(flatbuffer, inputs, kernel_set)
    else:
        run(flatbuffer, inputs, kernel_set)  # the limit is another kernel set's: this one computes


@pytest.mark.parametrize("limit", LIMITS, ids=_ids)
def test_the_driver_declares_the_model_beyond_the_limit_unsupported(limit: Limit) -> None:
    model, _ = limit.beyond()
    reason = model_reason(model)
    assert reason is not None and limit.reason in reason, reason
    for factory in (driver_under_test.create_litert_device, driver_under_test.create_litert_xnnpack_device):
        assert factory().get_supported_operations(model) == (ErrorStatus.NONE, [False])


@pytest.mark.parametrize("kernel_set", list(KernelSet))
@pytest.mark.parametrize("limit", LIMITS, ids=_ids)
def test_the_model_at_the_edge_stays_supported_and_matches_the_reference(limit: Limit, kernel_set: KernelSet) -> None:
    model, inputs = limit.edge()
    assert model_reason(model) is None
    check_against_reference(model, inputs, (kernel_set,))


THRESHOLDS = [limit for limit in LIMITS if limit.threshold is not None]


@pytest.mark.parametrize("limit", THRESHOLDS, ids=_ids)
def test_the_first_value_prepare_accepts_stays_supported(limit: Limit) -> None:
    model, inputs = limit.threshold()
    assert model_reason(model) is None
    flatbuffer = translate(model, constant_reader(model))
    for kernel_set in KernelSet:
        run(flatbuffer, inputs, kernel_set)  # allocated and invoked; the values are another matter


def test_a_limit_inside_an_if_branch_makes_the_if_unsupported() -> None:
    # The XNNPACK delegate takes operators of referenced subgraphs too.
    model, inputs = in_if_branches(fully_connected(QS8, Weights(input=1.0, filter=256.0)))
    reason = model_reason(model)
    assert reason is not None and reason.startswith("IF: then subgraph") and "requantization scale" in reason
    flatbuffer = unchecked_flatbuffer(model)
    with pytest.raises(RuntimeError, match="failed to create XNNPACK runtime"):
        run(flatbuffer, inputs, K.XNNPACK)
    for kernel_set in BUILTIN:
        run(flatbuffer, inputs, kernel_set)


@pytest.mark.parametrize("build", list(OUTSIDE_XNNPACK.values()), ids=list(OUTSIDE_XNNPACK))
def test_beyond_an_xnnpack_limit_an_operator_the_delegate_leaves_stays_supported(build) -> None:
    model, inputs = build()
    assert model_reason(model) is None
    flatbuffer = translate(model, constant_reader(model))
    for kernel_set in KernelSet:
        run(flatbuffer, inputs, kernel_set)


@pytest.mark.xfail(
    strict=True,
    reason="LiteRT bug: CalculateActivationRangeQuantized (kernel_util.cc) lets a fused activation bound whose "
    "quotient by the output scale rounds to exactly 2^31 through (it compares with float(INT32_MAX), which is 2^31) "
    "and then converts it to int32, which overflows: the upper clamp bound becomes INT32_MIN plus the zero point and "
    "every output comes out as 0 (with zero point 0). XNNPACK, which takes this ADD, computes it right",
)
@pytest.mark.parametrize("kernel_set", [K.OPTIMIZED, K.REFERENCE])
def test_a_fused_activation_bound_of_exactly_two_to_the_31_clamps_nothing(kernel_set: KernelSet) -> None:
    check_against_reference(*elementwise(O.ADD, QS8, RELU6_EDGE, RELU6), (kernel_set,))
