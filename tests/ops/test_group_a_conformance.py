"""Group A reference kernels, shape functions and signature checks against the public conformance vectors."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import harness.ops
from harness.hal import OperandType as T
from harness.hal import OperationType, SymmPerChannelQuantParams, numpy_dtype
from harness.hal import OperationType as Op
from harness.ops.common import signature_accepts
from tests.ops import _build as build

CONFORMANCE_FAMILIES = {
    "elementwise",
    "activations",
    "comparison",
    "reduction",
    "reshape",
    "selection",
    "quantization",
    "control_flow",
}


def _spec(case):
    return harness.ops.get(OperationType[case["model"]["operations"][0]["type"]])


def test_kernel_matches_expected_outputs(conformance_case, conformance_tools):
    """Every output value of the reference kernel is within the O2 tolerance of the vector's value."""
    spec = _spec(conformance_case)
    if spec.kernel is None:
        pytest.skip(f"{spec.op.name} has no reference kernel (random output)")
    for example in conformance_tools.examples(conformance_case):
        ctx = example.kernel_context()
        outputs = spec.kernel(ctx)
        expected = example.expected()
        assert len(outputs) == len(expected)
        for k, (actual, exp) in enumerate(zip(outputs, expected)):
            if exp is None:
                continue
            values, dims = exp
            assert actual.dtype == numpy_dtype(ctx.output_operands[k].type), f"output {k} dtype"
            assert tuple(actual.shape) == dims, f"output {k} shape {actual.shape}, expected {dims}"
            bad = conformance_tools.mismatches(actual, values, ctx.output_operands[k], ctx.relaxed)
            assert not bad, f"output {k}: {len(bad)} mismatches: {bad[:5]}"


def test_signature_accepts_and_checks_pass(conformance_case, conformance_tools):
    """The case's operand types match one signature whose extra checks report no violation."""
    spec = _spec(conformance_case)
    example = conformance_tools.examples(conformance_case)[0]
    ctx = example.shape_context(constants_only=True)
    input_types = [o.type if o is not None else None for o in ctx.operands]
    output_types = [o.type for o in ctx.outputs]
    matching = [s for s in spec.signatures if signature_accepts(s, input_types, output_types)]
    assert matching, f"no signature accepts {input_types} -> {output_types}"
    violations = [s.check(ctx) if s.check else [] for s in matching]
    assert any(not v for v in violations), f"violations: {violations}"


def test_shape_function_gives_expected_dims(conformance_case, conformance_tools):
    """With every input value known the shape function gives the exact output dims; with constants only,
    compatible ones (0 = unknown)."""
    spec = _spec(conformance_case)
    for example in conformance_tools.examples(conformance_case):
        expected = [e[1] if e is not None else None for e in example.expected()]
        full = spec.shape(example.shape_context(constants_only=False))
        assert [tuple(s) for s, e in zip(full, expected) if e is not None] == [e for e in expected if e is not None]
        partial = spec.shape(example.shape_context(constants_only=True))
        for got, exp in zip(partial, expected):
            if exp is None or got == ():
                continue
            assert len(got) == len(exp) and all(g in (0, e) for g, e in zip(got, exp)), (got, exp)


# ----------------------------------------------------------------------------------------------- the catalogue

GROUP_A = [
    "ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "POW", "ABS", "NEG", "EXP", "LOG", "SQRT", "RSQRT", "SIN",
    "FLOOR", "RELU", "RELU1", "RELU6", "LOGISTIC", "TANH", "ELU", "HARD_SWISH", "PRELU", "SOFTMAX", "LOG_SOFTMAX",
    "EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL", "LOGICAL_AND", "LOGICAL_OR",
    "LOGICAL_NOT", "SELECT", "REDUCE_ALL", "REDUCE_ANY", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_SUM",
    "MEAN", "ARGMAX", "ARGMIN", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "CONCATENATION", "SPLIT", "TILE",
    "PAD", "PAD_V2", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "CHANNEL_SHUFFLE",
    "STRIDED_SLICE", "SLICE", "GATHER", "FILL", "RANK", "TOPK_V2", "EMBEDDING_LOOKUP", "HASHTABLE_LOOKUP",
    "QUANTIZE", "DEQUANTIZE", "CAST", "RANDOM_MULTINOMIAL", "IF", "WHILE",
]  # fmt: skip
WITHOUT_KERNEL = {"RANDOM_MULTINOMIAL"}  # random output: judged as a distribution, not by a kernel


def _introduced_in(op: OperationType) -> str:
    """The HAL version that added an operation: 1.0 numbered 0-28, 1.1 29-37, 1.2 38-95, 1.3 96-101."""
    return "V1_0" if op <= 28 else "V1_1" if op <= 37 else "V1_2" if op <= 95 else "V1_3"


@pytest.mark.parametrize("name", GROUP_A)
def test_every_group_a_operation_is_catalogued(name):
    op = OperationType[name]
    spec = harness.ops.get(op)
    assert spec is not None and spec.family in CONFORMANCE_FAMILIES
    assert spec.shape is not None
    assert (spec.kernel is None) == (name in WITHOUT_KERNEL)
    assert spec.signatures
    versions = {s.version for s in spec.signatures}
    assert versions <= {"V1_0", "V1_1", "V1_2", "V1_3"}
    assert min(versions) == _introduced_in(op)
    for sig in spec.signatures:
        assert all(arg.types for arg in (*sig.inputs, *sig.outputs))
        assert 0 < sig.required_inputs <= len(sig.inputs)
        # Past the required inputs: optional ones, or a repeated one that may also occur no time at all (IF's
        # branch inputs).
        assert all(arg.optional or arg.repeated for arg in sig.inputs[sig.required_inputs :])


def _backticked_first_cells(table: str) -> set[str]:
    """Backticked names in the first column of a markdown table."""
    return {
        name
        for line in table.splitlines()
        if line.startswith("| `")
        for name in re.findall(r"`(\w+)`", line.split("|")[1])
    }


def _documented_hints() -> tuple[set[str], set[str]]:
    """(hint keys, structural kinds) documented in harness/ops/HINTS.md."""
    text = (Path(harness.ops.__file__).parent / "HINTS.md").read_text()
    keys_table, kinds_table = text.split("## Structural kinds")
    return _backticked_first_cells(keys_table), _backticked_first_cells(kinds_table)


@pytest.mark.parametrize("name", GROUP_A)
def test_hints_use_documented_keys_and_kinds(name):
    keys, kinds = _documented_hints()
    hints = harness.ops.get(OperationType[name]).hints
    assert set(hints) <= keys
    for spec in hints.get("params", {}).values():
        assert isinstance(spec, (list, tuple)) or spec in kinds, spec


# ----------------------------------------------------------------------------------------------- every typing

# Default quantization of generated quantized data, per type.
_QUANT = {
    T.TENSOR_QUANT8_ASYMM: (0.5, 128),
    T.TENSOR_QUANT8_ASYMM_SIGNED: (0.5, 0),
    T.TENSOR_QUANT8_SYMM: (0.5, 0),
    T.TENSOR_QUANT16_SYMM: (0.5, 0),
    T.TENSOR_QUANT16_ASYMM: (0.5, 100),
    T.TENSOR_QUANT8_SYMM_PER_CHANNEL: (0.0, 0),
}
_SIGMOID = {T.TENSOR_QUANT8_ASYMM: (1 / 256, 0), T.TENSOR_QUANT8_ASYMM_SIGNED: (1 / 256, -128)}
_TANH = {T.TENSOR_QUANT8_ASYMM: (1 / 128, 128), T.TENSOR_QUANT8_ASYMM_SIGNED: (1 / 128, 0)}


def D(t, shape, positive=False):  # noqa: N802 - reads like a type constructor in the plans below
    """Data tensor of type t: small values (1..3 when positive), quantized around the zero point."""
    n = int(np.prod(shape))
    base = (np.arange(n) % 3 + 1) if positive else (np.arange(n) % 5 - 2)
    scale, zero_point = _QUANT.get(t, (0.0, 0))
    if t == T.TENSOR_BOOL8:
        return build.tensor(t, (base > 0).reshape(shape))
    if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        extra = SymmPerChannelQuantParams(scales=[0.5] * shape[0], channel_dim=0)
        return build.tensor(t, base.reshape(shape), extra_params=extra)
    if t in _QUANT:
        return build.tensor(t, (base * 2 + zero_point).reshape(shape), scale, zero_point)
    return build.tensor(t, (base * 0.5 if t in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16) else base).reshape(shape))


def S(t, v):  # noqa: N802
    return build.scalar(t, v)


def I(v):  # noqa: N802, E743
    return build.tensor(T.TENSOR_INT32, v)


def O(t, fixed=None):  # noqa: N802, E743
    """Output operand: the default quantization of its type, or the fixed one the HAL demands."""
    scale, zero_point = (fixed or {}).get(t) or _QUANT.get(t, (0.0, 0))
    return build.out(t, scale=scale, zero_point=zero_point)


def _binary(positive=False, activation=True):
    def plan(ts, os):
        extra = [S(T.INT32, 0)] if activation else []
        return [D(ts[0], (2, 3), positive), D(ts[1], (1, 3), positive), *extra], [O(os[0])]

    return plan


def _unary(positive=False, fixed=None):
    return lambda ts, os: ([D(ts[0], (2, 3), positive)], [O(os[0], fixed)])


def _reduce(keep):
    return lambda ts, os: ([D(ts[0], (2, 3, 2)), I([1, -1]), keep(ts)], [O(os[0])])


_FLOAT_SCALAR = {T.TENSOR_FLOAT16: T.FLOAT16}
PLANS = {
    **{op: _binary() for op in (Op.ADD, Op.SUB, Op.MUL)},
    Op.DIV: _binary(positive=True),
    **{op: _binary(activation=False) for op in (Op.MAXIMUM, Op.MINIMUM, Op.PRELU)},
    Op.POW: _binary(positive=True, activation=False),
    **{op: _binary(activation=False) for op in (Op.EQUAL, Op.NOT_EQUAL, Op.GREATER, Op.GREATER_EQUAL)},
    **{op: _binary(activation=False) for op in (Op.LESS, Op.LESS_EQUAL, Op.LOGICAL_AND, Op.LOGICAL_OR)},
    **{op: _unary() for op in (Op.ABS, Op.NEG, Op.EXP, Op.SIN, Op.FLOOR, Op.LOGICAL_NOT, Op.HARD_SWISH, Op.RANK)},
    **{op: _unary() for op in (Op.RELU, Op.RELU1, Op.RELU6, Op.CAST, Op.QUANTIZE)},
    **{op: _unary(positive=True) for op in (Op.LOG, Op.SQRT, Op.RSQRT)},
    Op.DEQUANTIZE: _unary(),
    Op.LOGISTIC: _unary(fixed=_SIGMOID),
    Op.TANH: _unary(fixed=_TANH),
    Op.ELU: lambda ts, os: ([D(ts[0], (2, 3)), S(ts[1], 1.0)], [O(os[0])]),
    Op.SOFTMAX: lambda ts, os: (
        [D(ts[0], (2, 3)), S(ts[1], 1.0), S(T.INT32, 0)],
        [O(os[0], _SIGMOID)],
    ),
    Op.LOG_SOFTMAX: lambda ts, os: ([D(ts[0], (2, 3)), S(ts[1], 1.0), S(T.INT32, -1)], [O(os[0])]),
    Op.SELECT: lambda ts, os: ([D(ts[0], (2, 3)), D(ts[1], (2, 3)), D(ts[2], (2, 3))], [O(os[0])]),
    **{op: _reduce(lambda ts: S(T.BOOL, True)) for op in (Op.REDUCE_ALL, Op.REDUCE_ANY, Op.REDUCE_MAX)},
    **{op: _reduce(lambda ts: S(T.BOOL, False)) for op in (Op.REDUCE_MIN, Op.REDUCE_PROD, Op.REDUCE_SUM)},
    Op.MEAN: _reduce(lambda ts: S(T.INT32, 1)),
    **{op: lambda ts, os: ([D(ts[0], (2, 3)), S(T.INT32, -1)], [O(os[0])]) for op in (Op.ARGMAX, Op.ARGMIN)},
    Op.RESHAPE: lambda ts, os: ([D(ts[0], (2, 3)), I([3, -1])], [O(os[0])]),
    Op.SQUEEZE: lambda ts, os: ([D(ts[0], (2, 1, 3)), I([1])], [O(os[0])]),
    Op.EXPAND_DIMS: lambda ts, os: ([D(ts[0], (2, 3)), S(T.INT32, 1)], [O(os[0])]),
    Op.TRANSPOSE: lambda ts, os: ([D(ts[0], (2, 3, 1)), I([2, 0, 1])], [O(os[0])]),
    Op.CONCATENATION: lambda ts, os: ([D(ts[0], (2, 3)), D(ts[0], (1, 3)), S(T.INT32, 0)], [O(os[0])]),
    Op.SPLIT: lambda ts, os: ([D(ts[0], (2, 4)), S(T.INT32, 1), S(T.INT32, 2)], [O(os[0]), O(os[0])]),
    Op.TILE: lambda ts, os: ([D(ts[0], (2, 3)), I([2, 1])], [O(os[0])]),
    Op.PAD: lambda ts, os: ([D(ts[0], (2, 3)), I([[1, 0], [0, 2]])], [O(os[0])]),
    Op.PAD_V2: lambda ts, os: ([D(ts[0], (2, 3)), I([[1, 0], [0, 2]]), S(ts[2], 1)], [O(os[0])]),
    Op.DEPTH_TO_SPACE: lambda ts, os: ([D(ts[0], (1, 1, 2, 4)), S(T.INT32, 2), S(T.BOOL, False)], [O(os[0])]),
    Op.SPACE_TO_DEPTH: lambda ts, os: ([D(ts[0], (1, 2, 4, 1)), S(T.INT32, 2), S(T.BOOL, False)], [O(os[0])]),
    Op.BATCH_TO_SPACE_ND: lambda ts, os: ([D(ts[0], (4, 1, 2, 1)), I([2, 2]), S(T.BOOL, True)], [O(os[0])]),
    Op.SPACE_TO_BATCH_ND: lambda ts, os: (
        [D(ts[0], (1, 3, 2, 1)), I([2, 2]), I([[1, 0], [0, 0]]), S(T.BOOL, False)],
        [O(os[0])],
    ),
    Op.CHANNEL_SHUFFLE: lambda ts, os: ([D(ts[0], (2, 4)), S(T.INT32, 2), S(T.INT32, 1)], [O(os[0])]),
    Op.STRIDED_SLICE: lambda ts, os: (
        [D(ts[0], (2, 3)), I([1, -1]), I([2, 0]), I([1, -1]), S(T.INT32, 0), S(T.INT32, 0), S(T.INT32, 1)],
        [O(os[0])],
    ),
    Op.SLICE: lambda ts, os: ([D(ts[0], (2, 3)), I([0, 1]), I([-1, 2])], [O(os[0])]),
    Op.GATHER: lambda ts, os: ([D(ts[0], (2, 3)), S(T.INT32, 1), I([[2], [0]])], [O(os[0])]),
    Op.FILL: lambda ts, os: ([I([2, 3]), S(ts[1], 1)], [O(os[0])]),
    Op.TOPK_V2: lambda ts, os: ([D(ts[0], (2, 3)), S(T.INT32, 2)], [O(os[0]), O(os[1])]),
    Op.EMBEDDING_LOOKUP: lambda ts, os: ([I([1, 1, 0]), D(ts[1], (2, 3))], [O(os[0])]),
    Op.HASHTABLE_LOOKUP: lambda ts, os: (
        [I([7, 1]), I([5, 7]), D(ts[2], (2, 3))],
        [O(os[0]), build.out(os[1], scale=1.0)],
    ),
}
_SWEEP = [
    pytest.param(op, k, id=f"{op.name}-{k}") for op in sorted(PLANS) for k in range(len(harness.ops.get(op).signatures))
]


@pytest.mark.parametrize(("op", "k"), _SWEEP)
def test_every_typing_runs_and_agrees_with_its_shape_function(op, k):
    """Each signature: valid operands pass its check; the kernel returns the output dtypes with the shapes
    the shape function predicts."""
    sig = harness.ops.get(op).signatures[k]
    inputs, outputs = PLANS[op]([a.types[0] for a in sig.inputs], [a.types[0] for a in sig.outputs])
    types = [i.operand.type for i in inputs]
    assert signature_accepts(sig, types, [o.type for o in outputs])
    ctx = build.shape_context(inputs, outputs)
    assert (sig.check(ctx) if sig.check else []) == []
    results = build.run(op, inputs, outputs)
    assert [r.dtype for r in results] == [numpy_dtype(o.type) for o in outputs]
    assert [tuple(s) for s in harness.ops.get(op).shape(ctx)] == [r.shape for r in results]


def test_the_sweep_covers_every_group_a_kernel_but_control_flow():
    assert {op.name for op in PLANS} == set(GROUP_A) - WITHOUT_KERNEL - {"IF", "WHILE"}
