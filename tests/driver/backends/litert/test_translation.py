"""The translation's own contracts: parameters given at run time, NCHW layouts and explicit padding, dynamic
shapes, concurrent runs, determinism, the rule registry and the error without LiteRT."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

from driver_under_test.backends.litert import (
    NOT_YET_WRITTEN,
    RULES,
    UNSUPPORTED,
    KernelSet,
    LiteRTProgram,
    UnsupportedModel,
    _registry,
    engine_version,
    translate,
    unsupported_reason,
)
from harness.gen import ModelConfig, RandomSource, generate_model
from harness.hal import ErrorStatus
from harness.hal import OperationType as O
from harness.reference import run_model
from tests.driver.backends.litert.build import Build, T, builtins_of, check_against_reference, per_channel
from tests.driver.backends.litert.cases import constant_reader, run_translated

rng = np.random.default_rng(7)


def f32(*shape) -> np.ndarray:
    """Random float32 values in [-2, 2)."""
    return rng.uniform(-2, 2, size=shape).astype(np.float32)


def add_model(dims, activation_as_input: bool = False):
    b = Build()
    x, y = b.input(T.TENSOR_FLOAT32, dims), b.input(T.TENSOR_FLOAT32, dims)
    act = b.input(T.INT32, []) if activation_as_input else b.i32(1)
    out = b.output(T.TENSOR_FLOAT32, dims)
    b.op(O.ADD, [x, y, act], [out])
    return b.model()


# ---- parameters given at run time ----


def test_a_parameter_given_at_run_time_is_refused_with_its_role() -> None:
    model = add_model([2, 2], activation_as_input=True)
    reason = unsupported_reason(model, 0, 0, constant_reader(model))
    assert reason is not None and "input 2 (activation)" in reason and "run time" in reason
    with pytest.raises(UnsupportedModel, match="activation"):
        translate(model, constant_reader(model))


def test_generated_parameters_given_at_run_time_are_refused() -> None:
    config = ModelConfig(
        operations=frozenset({int(O.CONV_2D)}), max_operations=1, control_flow=False, param_input_probability=1.0
    )
    refused = 0
    for seed in range(10):
        model = generate_model(RandomSource(seed), config).model
        params = [i for i in model.main.operations[0].inputs[3:] if model.main.operands[i].lifetime == 1]
        reason = unsupported_reason(model, 0, 0, constant_reader(model))
        if params:
            assert reason is not None and "given at run time" in reason
            refused += 1
    assert refused


def test_an_operation_without_a_rule_says_so() -> None:
    b = Build()
    x = b.input(T.TENSOR_FLOAT32, [1, 1, 4, 4])
    rois = b.input(T.TENSOR_FLOAT32, [1, 4])
    batches = b.input(T.TENSOR_INT32, [1])
    params = [b.i32(2), b.i32(2), b.const(T.FLOAT32, 1.0), b.const(T.FLOAT32, 1.0), b.i32(0), b.i32(0)]
    out = b.output(T.TENSOR_FLOAT32, [1, 2, 2, 4])
    b.op(O.ROI_ALIGN, [x, rois, batches, *params, b.const(T.BOOL, False)], [out])
    model = b.model()
    reason = unsupported_reason(model, 0, 0, constant_reader(model))
    assert reason.startswith("ROI_ALIGN: ")


# ---- layouts and padding ----


def conv_model(nchw: bool, pads, stride=(1, 1), dilation=None):
    """CONV_2D of a [1, 5, 6, 2] image (NHWC; NCHW when asked) with a [3, 3, 2, 2] filter and explicit pads."""
    b = Build()
    x = b.input(T.TENSOR_FLOAT32, [1, 2, 5, 6] if nchw else [1, 5, 6, 2])
    w = b.const(T.TENSOR_FLOAT32, f32(3, 3, 2, 2))
    bias = b.const(T.TENSOR_FLOAT32, f32(3))
    left, right, top, bottom = pads
    oh = (5 + top + bottom - 3) // stride[1] + 1
    ow = (6 + left + right - 2) // stride[0] + 1
    out = b.output(T.TENSOR_FLOAT32, [1, 3, oh, ow] if nchw else [1, oh, ow, 3])
    params = [b.i32(p) for p in pads] + [b.i32(stride[0]), b.i32(stride[1]), b.i32(0), b.const(T.BOOL, nchw)]
    b.op(O.CONV_2D, [x, w, bias, *params], [out])
    return b.model(), [f32(1, 2, 5, 6) if nchw else f32(1, 5, 6, 2)]


@pytest.mark.parametrize("nchw", [False, True], ids=["nhwc", "nchw"])
@pytest.mark.parametrize("pads", [(0, 0, 0, 0), (0, 1, 1, 1), (2, 0, 1, 3)], ids=["valid", "same", "odd"])
def test_conv_layouts_and_explicit_padding_match_the_reference(nchw: bool, pads) -> None:
    model, inputs = conv_model(nchw, pads)
    check_against_reference(model, inputs)
    ops = builtins_of(translate(model, constant_reader(model)))
    # Zero padding is VALID and padding equal to SAME's is SAME: no PAD operator; other padding needs one.
    assert ("PAD" in ops) == (pads == (2, 0, 1, 3))
    assert ops.count("TRANSPOSE") == (2 if nchw else 0)


def pool_model(kind: O, pads, nchw: bool = False, values=None):
    b = Build()
    x = b.input(T.TENSOR_FLOAT32, [1, 3, 4, 4] if nchw else [1, 4, 4, 3])
    left, right, top, bottom = pads
    oh, ow = (4 + top + bottom - 2) // 2 + 1, (4 + left + right - 2) // 2 + 1
    out = b.output(T.TENSOR_FLOAT32, [1, 3, oh, ow] if nchw else [1, oh, ow, 3])
    params = [b.i32(p) for p in pads] + [b.i32(2), b.i32(2), b.i32(2), b.i32(2), b.i32(0), b.const(T.BOOL, nchw)]
    b.op(kind, [x, *params], [out])
    return b.model()


@pytest.mark.parametrize("nchw", [False, True], ids=["nhwc", "nchw"])
def test_max_pool_with_explicit_padding_pads_with_the_lowest_value(nchw: bool) -> None:
    model = pool_model(O.MAX_POOL_2D, (1, 0, 1, 0), nchw)
    # Negative values only: padding with zeros would show through as 0 maxima.
    x = -np.abs(f32(1, 3, 4, 4) if nchw else f32(1, 4, 4, 3)) - 1
    check_against_reference(model, [x])
    assert "PADV2" in builtins_of(translate(model, constant_reader(model)))


@pytest.mark.parametrize("kind", [O.AVERAGE_POOL_2D, O.L2_POOL_2D])
@pytest.mark.parametrize("nchw", [False, True], ids=["nhwc", "nchw"])
def test_float_mean_pools_with_padding_beyond_same_divide_by_the_real_elements(kind: O, nchw: bool) -> None:
    model = pool_model(kind, (1, 0, 1, 0), nchw)
    check_against_reference(model, [f32(1, 3, 4, 4) if nchw else f32(1, 4, 4, 3)])
    assert "PAD" in builtins_of(translate(model, constant_reader(model)))


@pytest.mark.parametrize("kind", [O.AVERAGE_POOL_2D, O.L2_POOL_2D])
@pytest.mark.parametrize("nchw", [False, True], ids=["nhwc", "nchw"])
def test_float_mean_pools_leave_windows_wholly_in_padding_finite_and_the_rest_exact(kind: O, nchw: bool) -> None:
    # Padding (2, 0, 2, 0): the first row and column of windows hold padding only (0 / 0, which the HAL leaves
    # undefined, so the reference calls the whole result unspecified); the other windows are VALID pooling's.
    x = f32(1, 3, 4, 4) if nchw else f32(1, 4, 4, 3)
    padded = pool_model(kind, (2, 0, 2, 0), nchw)
    assert run_model(padded, [x]).unspecified
    valid = run_model(pool_model(kind, (0, 0, 0, 0), nchw), [x])
    assert valid.status == ErrorStatus.NONE and not valid.unspecified
    inner = (
        (slice(None), slice(None), slice(1, None), slice(1, None))
        if nchw
        else (slice(None), slice(1, None), slice(1, None))
    )
    for kernel_set in KernelSet:
        actual = np.asarray(run_translated(padded, [x], kernel_set)[0])
        assert np.isfinite(actual).all(), kernel_set
        np.testing.assert_allclose(actual[inner], valid.outputs[0], rtol=1e-5, atol=1e-6, err_msg=str(kernel_set))


def test_quantized_average_pool_with_padding_beyond_same_is_refused() -> None:
    b = Build()
    x = b.input(T.TENSOR_QUANT8_ASYMM, [1, 4, 4, 3], 0.1, 128)
    out = b.output(T.TENSOR_QUANT8_ASYMM, [1, 3, 3, 3], 0.1, 128)
    params = [b.i32(p) for p in (1, 0, 1, 0, 2, 2, 2, 2, 0)]
    b.op(O.AVERAGE_POOL_2D, [x, *params], [out])
    model = b.model()
    reason = unsupported_reason(model, 0, 0, constant_reader(model))
    assert reason is not None and "neither VALID nor SAME" in reason


def test_uint8_conv_with_a_per_channel_filter_runs_through_int8() -> None:
    b = Build()
    x = b.input(T.TENSOR_QUANT8_ASYMM, [1, 4, 4, 2], 0.05, 120)
    weights = rng.integers(-20, 20, (3, 2, 2, 2))
    w = b.const(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, weights, extra=per_channel([0.1, 0.2, 0.05]))
    bias = b.const(T.TENSOR_INT32, rng.integers(-50, 50, 3))
    out = b.output(T.TENSOR_QUANT8_ASYMM, [1, 3, 3, 3], 0.1, 128)
    b.op(O.CONV_2D, [x, w, bias, b.i32(2), b.i32(1), b.i32(1), b.i32(0)], [out])  # implicit VALID
    model = b.model()
    check_against_reference(model, [rng.integers(0, 255, (1, 4, 4, 2)).astype(np.uint8)])
    assert builtins_of(translate(model, constant_reader(model))) == ["QUANTIZE", "CONV_2D", "QUANTIZE"]


# ---- float16 through float32 ----


def half_model(kind: O, constant_rhs: bool):
    b = Build()
    x = b.input(T.TENSOR_FLOAT16, [2, 3])
    y = b.const(T.TENSOR_FLOAT16, f32(2, 3)) if constant_rhs else b.input(T.TENSOR_FLOAT16, [2, 3])
    out = b.output(T.TENSOR_FLOAT16, [2, 3])
    b.op(kind, [x, y, b.i32(0)], [out])
    return b.model(), [f32(2, 3).astype(np.float16) for _ in range(1 if constant_rhs else 2)]


@pytest.mark.parametrize("constant", [False, True], ids=["input", "constant"])
def test_float16_without_a_litert_kernel_runs_in_float32(constant: bool) -> None:
    model, inputs = half_model(O.SUB, constant)
    check_against_reference(model, inputs)
    # Inputs CAST up (a constant is converted at translation time), the result CAST down.
    expected = ["CAST", "SUB", "CAST"] if constant else ["CAST", "CAST", "SUB", "CAST"]
    assert builtins_of(translate(model, constant_reader(model))) == expected


def test_float16_with_litert_kernels_stays_float16() -> None:
    model, inputs = half_model(O.ADD, False)
    check_against_reference(model, inputs)
    assert builtins_of(translate(model, constant_reader(model))) == ["ADD"]


def test_a_uint16_cast_copies_the_stored_values() -> None:
    b = Build()
    x = b.input(T.TENSOR_QUANT16_ASYMM, [3], 0.125, 100)
    out = b.output(T.TENSOR_QUANT16_ASYMM, [3], 0.125, 100)
    b.op(O.CAST, [x], [out])
    check_against_reference(b.model(), [np.array([0, 40000, 65535], dtype=np.uint16)])


# ---- dynamic shapes ----


@pytest.mark.parametrize("kernel_set", list(KernelSet))
def test_inputs_of_unknown_dimensions_are_resized_between_runs(kernel_set: KernelSet) -> None:
    model = add_model([0, 3])
    program = LiteRTProgram(translate(model, constant_reader(model)), kernel_set)
    for rows in (2, 5, 2, 1):
        a, b = f32(rows, 3), f32(rows, 3)
        (out,) = program.run([a, b])
        assert out.shape == (rows, 3)
        np.testing.assert_allclose(out, np.maximum(a + b, 0), rtol=1e-6)


def test_an_input_of_unknown_rank_takes_the_actual_shape() -> None:
    model = add_model([])
    program = LiteRTProgram(translate(model, constant_reader(model)))
    for shape in ((2, 2), (3,), (1, 2, 3)):
        a, b = f32(*shape), f32(*shape)
        (out,) = program.run([a, b])
        np.testing.assert_allclose(out, np.maximum(a + b, 0), rtol=1e-6)


def test_topk_orders_ties_when_the_last_dimension_is_unknown() -> None:
    b = Build()
    x = b.input(T.TENSOR_FLOAT32, [2, 0])
    values, indices = b.output(T.TENSOR_FLOAT32, [2, 2]), b.output(T.TENSOR_INT32, [2, 2])
    b.op(O.TOPK_V2, [x, b.i32(2)], [values, indices])
    model = b.model()
    for row in ([1, 3, 3, 2], [5, 5, 5, 1, 5]):
        check_against_reference(model, [np.asarray([row, row[::-1]], dtype=np.float32)])


@pytest.mark.parametrize("float_type", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16])
def test_detection_outputs_of_unknown_rank_take_their_shape_with_one_detection(float_type: int) -> None:
    # LiteRT's SELECT_V2 keeps its output's declared shape when every operand holds one element: an output of
    # unknown rank, declared as a scalar, came out [] where one image with one detection gives [1, 1].
    scalar = T.FLOAT32 if float_type == T.TENSOR_FLOAT32 else T.FLOAT16
    b = Build()
    scores = b.const(float_type, [[[0.1, 0.9], [0.2, 0.8], [0.3, 0.7]]])
    deltas, anchors = b.input(float_type, [1, 3, 4]), b.input(float_type, [3, 4])
    params = [b.const(scalar, v) for v in (10.0, 10.0, 5.0, 5.0)]
    flags = [b.const(T.BOOL, True), b.i32(1), b.i32(1), b.i32(1), b.const(scalar, 0.5), b.const(scalar, 0.9)]
    outs = [
        b.output(float_type, []),
        b.output(float_type, []),
        b.output(T.TENSOR_INT32, []),
        b.output(T.TENSOR_INT32, []),
    ]
    b.op(O.DETECTION_POSTPROCESSING, [scores, deltas, anchors, *params, *flags, b.const(T.BOOL, False)], outs)
    model = b.model()
    dtype = np.float32 if float_type == T.TENSOR_FLOAT32 else np.float16
    box_anchors = np.asarray([[1, 1, 2, 2], [5, 5, 2, 2], [9, 9, 2, 2]], dtype=dtype)
    check_against_reference(model, [np.zeros((1, 3, 4), dtype=dtype), box_anchors])


def test_a_missing_input_value_is_refused() -> None:
    model = add_model([2])
    program = LiteRTProgram(translate(model, constant_reader(model)))
    with pytest.raises(ValueError, match="input 1 has no value"):
        program.run([f32(2), None])
    with pytest.raises(ValueError, match="takes 2 inputs"):
        program.run([f32(2)])


# ---- concurrency and determinism ----


def test_two_threads_share_one_program() -> None:
    model = add_model([0, 4])
    program = LiteRTProgram(translate(model, constant_reader(model)), KernelSet.XNNPACK)
    errors: list[str] = []

    def work(rows: int) -> None:
        local = np.random.default_rng(rows)
        for _ in range(200):
            a = local.uniform(-1, 1, (rows, 4)).astype(np.float32)
            b = local.uniform(-1, 1, (rows, 4)).astype(np.float32)
            (out,) = program.run([a, b])
            if out.shape != (rows, 4) or not np.allclose(out, np.maximum(a + b, 0)):
                errors.append(f"rows {rows}: wrong result")

    threads = [threading.Thread(target=work, args=(rows,)) for rows in (1, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_the_flatbuffer_is_deterministic() -> None:
    config = ModelConfig(operations=frozenset({int(O.CONV_2D), int(O.ADD)}), max_operations=3, control_flow=False)
    for seed in range(8):
        generated = generate_model(RandomSource(seed), config)
        model = generated.model
        if any(unsupported_reason(model, 0, k, constant_reader(model)) for k in range(len(model.main.operations))):
            continue
        first = translate(model, constant_reader(model))
        again = generate_model(RandomSource(seed), config).model
        assert translate(again, constant_reader(again)) == first


# ---- the registry and the engine ----


def test_every_operation_is_translated_declared_unsupported_or_listed_as_not_written() -> None:
    for op in O:
        assert (op in RULES) + (op in UNSUPPORTED) + (op in NOT_YET_WRITTEN) == 1, op


def test_no_operation_is_left_without_a_rule_or_a_decision() -> None:
    assert NOT_YET_WRITTEN == frozenset()


def test_every_rule_documents_its_hal_operands() -> None:
    for op, found in RULES.items():
        assert "HAL" in found.doc and "input" in found.doc, op


def test_a_second_rule_for_an_operation_is_refused() -> None:
    with pytest.raises(RuntimeError, match="second translation rule for ADD"):
        _registry.rule(O.ADD)(lambda op: None)
    assert RULES[O.ADD].emit.__name__ == "arithmetic"


def test_engine_version_names_the_distribution() -> None:
    assert engine_version() == "ai-edge-litert 2.3.0"


MISSING = """
import sys
sys.modules["ai_edge_litert"] = None  # an import of it (or of its modules) now raises ImportError
from driver_under_test.backends.litert import LiteRTMissing, translate, unsupported_reason
from tests.driver.backends.litert.test_translation import add_model
from tests.driver.backends.litert.cases import constant_reader
model = add_model([2])
assert unsupported_reason(model, 0, 0, constant_reader(model)) is None
try:
    translate(model, constant_reader(model))
except LiteRTMissing as exc:
    print(exc)
"""


def test_without_litert_support_checks_work_and_translation_says_how_to_install() -> None:
    result = subprocess.run([sys.executable, "-c", MISSING], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "pip install 'nnfuzz[litert]'" in result.stdout


# ---- resize flags ----


def resize_model(kind: O, flags, by_scale: bool, quantized: bool, nchw: bool = False):
    b = Build()
    t = T.TENSOR_QUANT8_ASYMM if quantized else T.TENSOR_FLOAT32
    q = (0.05, 100) if quantized else (0.0, 0)
    x = b.input(t, [1, 2, 3, 5] if nchw else [1, 3, 5, 2], *q)
    out = b.output(t, [1, 2, 7, 8] if nchw else [1, 7, 8, 2], *q)
    size = [b.const(T.FLOAT32, 8 / 5), b.const(T.FLOAT32, 7 / 3)] if by_scale else [b.i32(8), b.i32(7)]
    flag_inputs = [b.const(T.BOOL, nchw)] + [b.const(T.BOOL, f) for f in flags]
    b.op(kind, [x, *size, *flag_inputs], [out])
    return b.model()


@pytest.mark.parametrize("kind", [O.RESIZE_BILINEAR, O.RESIZE_NEAREST_NEIGHBOR], ids=lambda o: o.name)
@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True)], ids=["plain", "align", "half"])
@pytest.mark.parametrize("quantized", [False, True], ids=["float", "quant8"])
def test_resize_flags_match_the_reference(kind: O, flags, quantized: bool) -> None:
    for by_scale in (False, True):
        model = resize_model(kind, flags, by_scale, quantized)
        x = rng.integers(0, 255, (1, 3, 5, 2)).astype(np.uint8) if quantized else f32(1, 3, 5, 2)
        check_against_reference(model, [x])
