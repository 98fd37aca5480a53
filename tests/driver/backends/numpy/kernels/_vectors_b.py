"""Conformance-vector plumbing for the tests of the driver's convolution, pooling, normalization, resize,
recurrent and hashing kernels: parameter lists over the public single-operation cases and the check itself."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import lookup
from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor
from harness.hal import OperandType, OperationType, numpy_dtype
from tests.driver.backends.numpy.kernels import conftest as vectors
from tests.driver.backends.numpy.kernels.conftest import VectorCase, assert_close, run_vector_case, single_op_cases

FILES = ("aosp_cts_v1_0", "aosp_cts_v1_1", "aosp_cts_v1_2")

# Vectors whose expected values are wrong, with why; a correct kernel must fail them.
KNOWN_BAD_VECTORS: dict[str, str] = {
    # The 1.2 instance_normalization vectors divide by sqrt(mean(x^2) + eps) instead of sqrt(variance + eps)
    # (channel 1 of every example); later releases of the same public specification corrected the values.
    "instance_normalization": "published expected values use mean(x^2) instead of the variance",
}


def _known_bad(case: VectorCase) -> str | None:
    for prefix, reason in KNOWN_BAD_VECTORS.items():
        if case.id.startswith(prefix):
            return reason
    return None


def _omitting_empty_inputs(case: dict) -> dict:
    """A case whose model inputs given with no value (hasNoValue) get zero dimensions, which the kernels read as
    an omitted optional input."""
    patched = copy.deepcopy(case)
    for example in patched["examples"]:
        for argument in example["inputs"]:
            if not argument["value"]:
                argument["dimensions"] = [0]
    return patched


def load_cases(op_names: Iterable[str], files: Iterable[str] = FILES) -> list[VectorCase]:
    """The single-operation cases of these operations.

    Falls back to a local pass when the shared loader rejects model inputs given without a value (runtime
    `hasNoValue` arguments, as some LSTM vectors have).
    """
    names, files = set(op_names), tuple(files)
    try:
        return single_op_cases(names, files)
    except ValueError:
        found: list[VectorCase] = []
        for name in files:
            for case in vectors._load_file(name):
                operations = case["model"]["operations"]
                if len(operations) == 1 and operations[0]["type"] in names:
                    if set(operations[0]["outputs"]) <= set(case["model"]["outputIndexes"]):
                        found.extend(vectors._cases_of(_omitting_empty_inputs(case)))
        return found


def case_params(op_names: Iterable[str], files: Iterable[str] = FILES) -> list:
    """pytest params (one per example) of every single-operation case of these operations."""
    params = []
    for case in load_cases(op_names, files):
        reason = _known_bad(case)
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        params.append(pytest.param(case, id=case.id, marks=marks))
    return params


def run_and_check(case: VectorCase) -> None:
    """Run the driver's kernel on a case and compare every compared output under REQUIREMENTS O2."""
    run_vector_case(case)


_UNSIGNED = OperandType.TENSOR_QUANT8_ASYMM


def _to_signed(t: Tensor | None) -> Tensor | None:
    """The same real values stored as TENSOR_QUANT8_ASYMM_SIGNED (stored values and zero point shift by -128)."""
    if t is None or t.type != _UNSIGNED:
        return t
    data = None if t.data is None else (t.data.astype(np.int16) - 128).astype(np.int8)
    return dataclasses.replace(t, type=int(OperandType.TENSOR_QUANT8_ASYMM_SIGNED), zero_point=t.zero_point - 128,
                               data=data)


def signed_variant(case: VectorCase) -> tuple[OpCall, list[np.ndarray]]:
    """A quant8 case re-expressed in TENSOR_QUANT8_ASYMM_SIGNED, with its expected outputs shifted to match."""
    call = dataclasses.replace(case.call, inputs=[_to_signed(t) for t in case.call.inputs],
                               outputs=[_to_signed(t) for t in case.call.outputs])
    expected = [(e.astype(np.int16) - 128).astype(np.int8) if t == _UNSIGNED else e
                for e, t in zip(case.expected, case.output_types)]
    return call, expected


def quant8_cases(op_names: Iterable[str], files: Iterable[str] = FILES) -> list:
    """pytest params of the cases whose primary input is TENSOR_QUANT8_ASYMM."""
    return [pytest.param(c, id=c.id) for c in load_cases(op_names, files)
            if c.call.inputs[0] is not None and c.call.inputs[0].type == _UNSIGNED]


def check_signed_variant(case: VectorCase) -> None:
    """Signed storage of the same real values must give the same real results (stored values shift by 128)."""
    call, expected = signed_variant(case)
    outputs = lookup(case.op).fn(call)
    for k, (e, actual) in enumerate(zip(expected, outputs)):
        if k in case.ignored_outputs:
            continue
        assert actual.dtype == e.dtype
        operand_type = call.outputs[k].type
        assert_close(e, actual, operand_type, case.relaxed)


def scalar(value: int | float | bool, operand_type: int = OperandType.INT32) -> Tensor:
    """A scalar input tensor."""
    dtype = {OperandType.INT32: np.int32, OperandType.FLOAT32: np.float32, OperandType.BOOL: np.bool_}
    return Tensor(type=int(operand_type), shape=(), data=np.array(value, dtype=dtype[operand_type]))


def tensor(values: object, operand_type: int = OperandType.TENSOR_FLOAT32, scale: float = 0.0,
           zero_point: int = 0, **extra: object) -> Tensor:
    """An input tensor from nested lists, stored in the type's dtype."""
    data = np.asarray(values).astype(numpy_dtype(operand_type))
    return Tensor(type=int(operand_type), shape=data.shape, scale=scale, zero_point=zero_point, data=data,
                  **extra)


def output(operand_type: int = OperandType.TENSOR_FLOAT32, scale: float = 0.0, zero_point: int = 0) -> Tensor:
    """Declared output metadata with unknown shape."""
    return Tensor(type=int(operand_type), shape=(), scale=scale, zero_point=zero_point)


def call_of(inputs: list[Tensor | None], outputs: list[Tensor] | None = None,
            options: Mapping[str, object] | None = None) -> OpCall:
    """An OpCall with one float32 output unless told otherwise."""
    return OpCall(inputs=inputs, outputs=outputs or [output()], options=dict(options or {}))


# --- multi-operation cases, run operation by operation through the driver's kernels ----------------------------


@dataclasses.dataclass
class GraphCase:
    """One example of a multi-operation conformance case whose every operation has a driver kernel."""

    id: str
    model: dict
    example: dict
    ignored: list[int]


def _json_tensor(operand: dict, dims: list[int], values: list | None) -> Tensor | None:
    operand_type = int(OperandType[operand["type"]])
    data = None
    if values is not None:
        if not values and any(d != 0 for d in dims):
            return None  # given without a value: an omitted optional input
        dtype = numpy_dtype(operand_type)
        if 0 in dims:
            values = []  # zero-sized tensors are listed with a placeholder value
        floats = [float(v) for v in values] if dtype.kind == "f" else values
        data = np.array(floats, dtype=np.float64 if dtype.kind == "f" else None).astype(dtype).reshape(dims)
    channel = operand.get("channelQuant")
    return Tensor(type=operand_type, shape=tuple(dims), scale=float(operand.get("scale", 0.0)),
                  zero_point=int(operand.get("zeroPoint", 0)),
                  channel_scales=None if channel is None else np.asarray(channel["scales"], dtype=np.float32),
                  channel_dim=0 if channel is None else int(channel["channelDim"]), data=data)


def graph_params(op_names: Iterable[str], files: Iterable[str] = FILES) -> list:
    """pytest params of multi-operation cases that use one of these operations and only implemented ones."""
    wanted = set(op_names)
    params = []
    for name in files:
        for case in vectors._load_file(name):
            operations = case["model"]["operations"]
            kinds = {o["type"] for o in operations}
            if len(operations) < 2 or not kinds & wanted:
                continue
            if any(lookup(OperationType[k]) is None for k in kinds):
                continue
            for k, example in enumerate(case["examples"]):
                graph = GraphCase(f"{case['name']}#{k}", case["model"], example, case.get("ignoredOutputs") or [])
                params.append(pytest.param(graph, id=graph.id))
    return params


def run_graph(case: GraphCase) -> None:
    """Run each operation of the graph with the driver's kernels and compare the model outputs."""
    model = case.model
    operands = model["operands"]
    env: dict[int, Tensor | None] = {}
    for pos, index in enumerate(model["inputIndexes"]):
        argument = case.example["inputs"][pos]
        env[index] = _json_tensor(operands[index], argument["dimensions"], argument["value"])
    relaxed = bool(model.get("relaxComputationFloat32toFloat16", False))
    for operation in model["operations"]:
        inputs = []
        for index in operation["inputs"]:
            if index not in env:
                operand = operands[index]
                env[index] = _json_tensor(operand, operand["dimensions"], operand.get("value"))
            inputs.append(env[index])
        outputs = [_json_tensor(operands[i], operands[i]["dimensions"], None) for i in operation["outputs"]]
        results = lookup(OperationType[operation["type"]]).fn(OpCall(inputs=inputs, outputs=outputs,
                                                                     relaxed=relaxed))
        for index, meta, value in zip(operation["outputs"], outputs, results):
            env[index] = dataclasses.replace(meta, shape=value.shape, data=value)
    for pos, index in enumerate(model["outputIndexes"]):
        if pos in case.ignored:
            continue
        expected_json = case.example["outputs"][pos]
        expected = _json_tensor(operands[index], expected_json["dimensions"], expected_json["value"])
        actual = env[index]
        assert_close(expected.data, actual.data, expected.type, relaxed)
