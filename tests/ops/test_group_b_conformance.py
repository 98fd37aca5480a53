"""The neural-network operation families against the public conformance vectors: kernels (REQUIREMENTS O2),
shape functions, signatures and their checks, and multi-operation graphs that chain these kernels."""

from __future__ import annotations

from typing import Any

import pytest

import harness.ops
from harness.conformance.known_issues import known_wrong_reason
from harness.hal import OperationType
from harness.ops._nn_util import param_hints
from harness.ops.common import signature_accepts
from tests.ops._vectors_b import FAMILIES, FILES, _load, examples, judge, mismatches, run_graph, single_op_cases

VERSION_ORDER = ("V1_0", "V1_1", "V1_2", "V1_3")
GROUP_OPS = {spec.op.name for spec in harness.ops.all_specs() if spec.family in FAMILIES}

def _mark_known_wrong(item: tuple[str, dict[str, Any]]) -> Any:
    reason = known_wrong_reason(item[1].get("spec", ""))
    return pytest.param(item, marks=pytest.mark.xfail(strict=True, reason=reason)) if reason else item


SINGLE = single_op_cases(GROUP_OPS)
# Only the value comparison is wrong for known-wrong vectors; their shapes and typings still hold.
VALUE_CASES = [_mark_known_wrong(item) for item in SINGLE]
MULTI = [
    (f, case)
    for f in FILES
    for case in _load(f)
    if len(case["model"]["operations"]) > 1 and {o["type"] for o in case["model"]["operations"]} & GROUP_OPS
]


def _id(item: tuple[str, dict[str, Any]]) -> str:
    return f"{item[0][9:13]}-{item[1]['name']}"


def _spec(case: dict[str, Any]) -> harness.ops.OpSpec:
    return harness.ops.get(OperationType[case["model"]["operations"][0]["type"]])


def test_every_group_operation_is_catalogued():
    """All 30 operations of the neural-network families are registered, each with a shape function."""
    assert len(GROUP_OPS) == 30
    for spec in harness.ops.all_specs():
        if spec.family in FAMILIES:
            assert spec.shape is not None and spec.signatures, spec.op.name


@pytest.mark.parametrize("item", VALUE_CASES, ids=[_id(item) for item in SINGLE])
def test_kernel_matches_vectors(item):
    """Every compared output of the reference kernel is within the O2 tolerance of the vector's value."""
    _, case = item
    spec = _spec(case)
    if spec.kernel is None:
        pytest.skip(f"{spec.op.name} has no reference kernel")
    for example in examples(case):
        problems = judge(example, spec.kernel(example.kernel_context()))
        assert not problems, problems[:5]


@pytest.mark.parametrize("item", SINGLE, ids=[_id(i) for i in SINGLE])
def test_shape_function_agrees_with_vectors(item):
    """The shape function, seeing only constants, gives the vector's output shapes (0 where unknown)."""
    _, case = item
    example = examples(case)[0]
    shapes = _spec(case).shape(example.shape_context())
    assert len(shapes) == len(example.expected)
    for k, (shape, expected) in enumerate(zip(shapes, example.expected)):
        assert len(shape) == expected.ndim, f"output {k}: rank of {shape} vs {expected.shape}"
        assert all(s in (0, e) for s, e in zip(shape, expected.shape)), f"output {k}: {shape} vs {expected.shape}"


@pytest.mark.parametrize("item", SINGLE, ids=[_id(i) for i in SINGLE])
def test_signature_accepts_vector_typing(item):
    """Some signature, no newer than the vector's HAL version, accepts the operand types without violations."""
    _, case = item
    spec = _spec(case)
    ctx = examples(case)[0].shape_context()
    input_types = [None if o is None else o.type for o in ctx.operands]
    output_types = [o.type for o in ctx.outputs]
    matching = [s for s in spec.signatures if signature_accepts(s, input_types, output_types)]
    assert matching, f"no signature accepts {input_types} -> {output_types}"
    clean = [s for s in matching if not (s.check(ctx) if s.check else [])]
    assert clean, f"violations: {[s.check(ctx) for s in matching]}"
    oldest = min(VERSION_ORDER.index(s.version) for s in clean)
    assert oldest <= VERSION_ORDER.index(case["version"]), f"typing dated {VERSION_ORDER[oldest]}"


@pytest.mark.parametrize("item", MULTI, ids=[_id(i) for i in MULTI])
def test_graph_of_kernels_matches_vectors(item):
    """Multi-operation vectors that use these operations, run kernel after kernel, match within O2."""
    _, case = item
    try:
        actual, expected, operands = run_graph(case)
    except LookupError as e:
        pytest.skip(str(e))
    relaxed = bool(case["model"].get("relaxComputationFloat32toFloat16"))
    for k, (a, e, op) in enumerate(zip(actual, expected, operands)):
        if k in (case.get("ignoredOutputs") or []):
            continue
        problems = mismatches(a, e, op, relaxed)
        assert not problems, f"output {k}: {problems[:5]}"


def test_param_hints_name_inputs_of_some_signature():
    """Every "params" hint (keyed by input index, or by Arg name for two-form operations) names an input of
    at least one signature, so generators can place it."""
    for spec in harness.ops.all_specs():
        if spec.family not in FAMILIES:
            continue
        names = {a.name for s in spec.signatures for a in s.inputs}
        longest = max(len(s.inputs) for s in spec.signatures)
        for key in spec.hints.get("params", {}):
            assert key in names if isinstance(key, str) else 0 <= key < longest, f"{spec.op.name}: {key}"
        placed = [param_hints(spec, s) for s in spec.signatures]
        assert all(set(p) <= set(range(len(s.inputs))) for p, s in zip(placed, spec.signatures))
