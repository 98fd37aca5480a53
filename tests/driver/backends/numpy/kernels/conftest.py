"""Shared fixtures for the driver's kernel tests: the public conformance vectors as ready-to-run kernel calls,
and the accuracy criteria of REQUIREMENTS O2.

Test modules import the helpers by their package path:

    from tests.driver.backends.numpy.kernels.conftest import assert_close, run_vector_case, single_op_cases
"""

from __future__ import annotations

import functools
import gzip
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from driver_under_test.backends.numpy.kernels import lookup
from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor
from harness.hal import OperandType, OperationType, numpy_dtype

DEFAULT_FILES = ("aosp_cts_v1_0", "aosp_cts_v1_1", "aosp_cts_v1_2")

# REQUIREMENTS O2.
FLOAT32_ATOL = 1e-5
FLOAT32_RTOL = 5 * 1.1920928955078125e-7
FLOAT16_TOL = 5 * 0.0009765625
INTEGER_ATOL = 1
SKIP_ABOVE = 1e3

_FLOAT_TYPES = frozenset(
    {OperandType.TENSOR_FLOAT32, OperandType.FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.FLOAT16}
)
_FLOAT16_TYPES = frozenset({OperandType.TENSOR_FLOAT16, OperandType.FLOAT16})
_BOOL_TYPES = frozenset({OperandType.TENSOR_BOOL8, OperandType.BOOL})
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


@dataclass
class VectorCase:
    """One example of a single-operation conformance case, ready to hand to a kernel."""

    id: str  # "<case name>#<example index>"
    op: OperationType
    call: OpCall
    expected: list[np.ndarray]  # one per operation output, stored dtype, expected shape
    output_types: list[int]
    relaxed: bool
    ignored_outputs: list[int] = field(default_factory=list)  # positions among the operation's outputs
    dynamic_output_shape: bool = False
    version: str = ""


def conformance_dir() -> Path:
    """Folder holding the aosp_cts_*.jsonl.gz vectors (NNFUZZ_CONFORMANCE_DIR overrides the repo default)."""
    override = os.environ.get("NNFUZZ_CONFORMANCE_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[5] / ".." / "shared" / "conformance"


@functools.cache
def _load_file(name: str) -> tuple[dict, ...]:
    """All cases of one vector file (parsed once per test session); none when the file is absent, which
    leaves the parametrized tests with an empty parameter set that pytest reports as skipped."""
    path = conformance_dir() / f"{name}.jsonl.gz"
    if not path.is_file():
        return ()
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return tuple(json.loads(line) for line in fh if line.strip())


def _array(values: Sequence, operand_type: int, dims: Sequence[int]) -> np.ndarray:
    """Stored-dtype array from a JSON value list (non-finite floats arrive as strings)."""
    dtype = numpy_dtype(operand_type)
    if dtype.kind == "f":
        values = [_NON_FINITE[v] if isinstance(v, str) else v for v in values]
    if dtype.kind == "b":
        arr = np.array([bool(v) for v in values], dtype=dtype)
    else:
        arr = np.array(values, dtype=np.float64 if dtype.kind == "f" else np.int64).astype(dtype)
    return arr.reshape(tuple(dims))


def _operand_tensor(operand: dict, dims: Sequence[int], values: Sequence | None) -> Tensor:
    """A kernel Tensor for one model operand with the given runtime dimensions and values."""
    operand_type = int(OperandType[operand["type"]])
    data = None
    if values is not None and operand_type != OperandType.SUBGRAPH:
        data = _array(values, operand_type, dims)
    channel = operand.get("channelQuant")
    return Tensor(
        type=operand_type,
        shape=tuple(dims),
        scale=float(operand.get("scale", 0.0)),
        zero_point=int(operand.get("zeroPoint", 0)),
        channel_scales=None if channel is None else np.asarray(channel["scales"], dtype=np.float32),
        channel_dim=0 if channel is None else int(channel["channelDim"]),
        data=data,
    )


def _cases_of(case: dict) -> Iterable[VectorCase]:
    """The VectorCases (one per example) of a single-operation JSON case."""
    model = case["model"]
    operands = model["operands"]
    (operation,) = model["operations"]
    relaxed = bool(model.get("relaxComputationFloat32toFloat16", False))
    # ignoredOutputs counts model outputs; translate to positions among the operation's outputs.
    ignored = [operation["outputs"].index(model["outputIndexes"][p]) for p in case.get("ignoredOutputs") or []]
    for k, example in enumerate(case["examples"]):
        runtime: dict[int, tuple[list[int], list]] = {}
        for pos, index in enumerate(model["inputIndexes"]):
            runtime[index] = (example["inputs"][pos]["dimensions"], example["inputs"][pos]["value"])
        inputs: list[Tensor | None] = []
        for index in operation["inputs"]:
            operand = operands[index]
            if index in runtime:
                dims, values = runtime[index]
            elif "value" in operand:
                dims, values = operand["dimensions"], operand["value"]
            else:  # an omitted optional input
                inputs.append(None)
                continue
            inputs.append(_operand_tensor(operand, dims, values))
        outputs = [_operand_tensor(operands[i], operands[i]["dimensions"], None) for i in operation["outputs"]]
        expected: list[np.ndarray] = []
        for index in operation["outputs"]:
            pos = model["outputIndexes"].index(index)
            out = example["outputs"][pos]
            expected.append(_array(out["value"], int(OperandType[operands[index]["type"]]), out["dimensions"]))
        yield VectorCase(
            id=f"{case['name']}#{k}",
            op=OperationType[operation["type"]],
            call=OpCall(inputs=inputs, outputs=outputs, relaxed=relaxed),
            expected=expected,
            output_types=[t.type for t in outputs],
            relaxed=relaxed,
            ignored_outputs=ignored,
            dynamic_output_shape=bool(case.get("dynamicOutputShape", False)),
            version=case.get("version", ""),
        )


def single_op_cases(op_names: set[str], files: Sequence[str] = DEFAULT_FILES) -> list[VectorCase]:
    """Every example of every single-operation conformance case whose operation is in `op_names`."""
    found: list[VectorCase] = []
    for name in files:
        for case in _load_file(name):
            operations = case["model"]["operations"]
            if len(operations) == 1 and operations[0]["type"] in op_names:
                # Every operation output must be a model output for the expected values to exist.
                if set(operations[0]["outputs"]) <= set(case["model"]["outputIndexes"]):
                    found.extend(_cases_of(case))
    return found


def assert_close(expected: np.ndarray, actual: np.ndarray, operand_type: int, relaxed: bool = False) -> None:
    """Assert `actual` matches `expected` under REQUIREMENTS O2 for this output operand type."""
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    if operand_type in _BOOL_TYPES:
        bad = expected.astype(bool) != actual.astype(bool)
        assert not bad.any(), f"{int(bad.sum())} boolean mismatches: expected {expected[bad]}, got {actual[bad]}"
        return
    exp = expected.astype(np.float64)
    act = actual.astype(np.float64)
    if operand_type in _FLOAT_TYPES:
        if operand_type in _FLOAT16_TYPES or relaxed:
            atol = rtol = FLOAT16_TOL
        else:
            atol, rtol = FLOAT32_ATOL, FLOAT32_RTOL
        checked = np.isfinite(exp) & (np.abs(exp) <= SKIP_ABOVE)
    else:  # int32 and quantized values
        atol, rtol = INTEGER_ATOL, 0.0
        checked = np.ones(exp.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        bad = checked & ~(np.abs(act - exp) <= atol + rtol * np.abs(exp))
    if bad.any():
        where = np.argwhere(bad)[:5].tolist()
        raise AssertionError(
            f"{int(bad.sum())} of {exp.size} values out of tolerance (atol={atol}, rtol={rtol}); "
            f"first at {where}: expected {exp[bad][:5].tolist()}, got {act[bad][:5].tolist()}"
        )


def run_vector_case(case: VectorCase) -> None:
    """Run one conformance example through the driver's registered kernel and check every compared output."""
    entry = lookup(case.op)
    assert entry is not None, f"no driver kernel for {case.op.name}"
    primary = case.call.inputs[0]
    assert primary is not None and primary.type in entry.types, f"{case.op.name} kernel does not accept its input 0"
    results = entry.fn(case.call)
    assert len(results) == len(case.expected), f"{len(results)} outputs, expected {len(case.expected)}"
    for k, (expected, actual, operand_type) in enumerate(zip(case.expected, results, case.output_types)):
        if k in case.ignored_outputs:
            continue
        assert np.asarray(actual).dtype == expected.dtype, f"output {k}: dtype {np.asarray(actual).dtype}"
        assert_close(expected, actual, operand_type, case.relaxed)
