"""Conformance-vector plumbing for the operation catalogue's tests.

Loads the public conformance vectors (JSON lines, format in shared/conformance/README.md), turns a
single-operation case into the KernelContext / ShapeContext the catalogue consumes, and compares kernel
outputs with the expected values under the accuracy rule of REQUIREMENTS O2.

A test module that defines CONFORMANCE_FAMILIES (a set of catalogue family names) and takes a
`conformance_case` argument is parametrized over every single-operation case of those families.
"""

from __future__ import annotations

import functools
import gzip
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import harness.ops
from harness.hal import (
    Operand,
    OperandLifeTime,
    OperandType,
    OperationType,
    SymmPerChannelQuantParams,
    numpy_dtype,
)
from harness.ops import KernelContext, ShapeContext

VERSIONS = ("V1_0", "V1_1", "V1_2")
FLOAT32_TOL = (1e-5, 5 * 1.1920928955078125e-7)  # (atol, rtol)
FLOAT16_TOL = (5 * 0.0009765625, 5 * 0.0009765625)
SKIP_ABOVE = 1e3


def conformance_dir() -> Path:
    """Where the vectors live: $NNFUZZ_CONFORMANCE_DIR or shared/conformance next to the repository."""
    env = os.environ.get("NNFUZZ_CONFORMANCE_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / ".." / "shared" / "conformance"


@functools.cache
def load_cases(version: str) -> tuple[dict[str, Any], ...]:
    """Every case of one vector file (version 'V1_0', 'V1_1' or 'V1_2')."""
    path = conformance_dir() / f"aosp_cts_{version.lower()}.jsonl.gz"
    with gzip.open(path, "rt") as f:
        return tuple(json.loads(line) for line in f if line.strip())


def single_op_cases(families: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """(test id, case) for every single-operation case whose operation belongs to one of `families`."""
    out = []
    for version in VERSIONS:
        for case in load_cases(version):
            ops = case["model"]["operations"]
            if len(ops) != 1:
                continue
            spec = harness.ops.get(OperationType[ops[0]["type"]])
            if spec is not None and spec.family in families:
                out.append((f"{version}-{case['name']}", case))
    return out


def _decode(values: list[Any], operand_type: int, dims: list[int]) -> np.ndarray:
    """JSON values (flat, row-major; non-finite floats as strings) as a stored-form array."""
    dtype = numpy_dtype(operand_type)
    if dtype.kind == "f":
        flat = np.array([float(v) for v in values], dtype=np.float64).astype(dtype)
    else:
        flat = np.array(values).astype(dtype)
    return flat.reshape(dims)


def _operand(d: dict[str, Any], dims: list[int] | None = None) -> Operand:
    extra = None
    if "channelQuant" in d:
        extra = SymmPerChannelQuantParams(
            scales=list(d["channelQuant"]["scales"]), channel_dim=d["channelQuant"]["channelDim"]
        )
    return Operand(
        type=OperandType[d["type"]],
        dimensions=list(d["dimensions"] if dims is None else dims),
        scale=float(d["scale"]),
        zero_point=int(d["zeroPoint"]),
        lifetime=OperandLifeTime[d["lifetime"]],
        extra_params=extra,
    )


@dataclass
class OpCase:
    """One example of a single-operation case, resolved to the operation's inputs and outputs."""

    case: dict[str, Any]
    example: dict[str, Any]

    @property
    def operation(self) -> dict[str, Any]:
        """The case's only operation."""
        return self.case["model"]["operations"][0]

    @property
    def relaxed(self) -> bool:
        """True when float32 may be computed with float16 range and precision."""
        return bool(self.case["model"]["relaxComputationFloat32toFloat16"])

    def _input(self, index: int) -> tuple[Operand | None, np.ndarray | None, bool]:
        """(operand with actual dims, stored value, is_constant) of model operand `index`."""
        model = self.case["model"]
        d = model["operands"][index]
        if d["lifetime"] == "NO_VALUE":
            return None, None, False
        if "value" in d:
            return _operand(d), _decode(d["value"], OperandType[d["type"]], d["dimensions"]), True
        pos = model["inputIndexes"].index(index)
        ex = self.example["inputs"][pos]
        operand = _operand(d, ex["dimensions"])
        return operand, _decode(ex["value"], operand.type, ex["dimensions"]), False

    def kernel_context(self) -> KernelContext:
        """What the operation's kernel sees for this example."""
        resolved = [self._input(i) for i in self.operation["inputs"]]
        return KernelContext(
            inputs=[value for _, value, _ in resolved],
            input_operands=[operand for operand, _, _ in resolved],
            output_operands=self.output_operands(),
            relaxed=self.relaxed,
        )

    def shape_context(self, constants_only: bool) -> ShapeContext:
        """What shape functions and checks see: actual input dims; values of constants (or of all inputs)."""
        resolved = [self._input(i) for i in self.operation["inputs"]]
        return ShapeContext(
            operands=[operand for operand, _, _ in resolved],
            shapes=[tuple(operand.dimensions) if operand is not None else None for operand, _, _ in resolved],
            values=[value if (const or not constants_only) else None for _, value, const in resolved],
            outputs=self.output_operands(),
        )

    def output_operands(self) -> list[Operand]:
        """The operation's output operands as the model declares them (0 = unknown dimension)."""
        operands = self.case["model"]["operands"]
        return [_operand(operands[i]) for i in self.operation["outputs"]]

    def expected(self) -> list[tuple[np.ndarray, tuple[int, ...]] | None]:
        """Per operation output: (expected stored values, expected dims), None if ignored."""
        model = self.case["model"]
        out = []
        for index in self.operation["outputs"]:
            pos = model["outputIndexes"].index(index)
            if pos in self.case.get("ignoredOutputs", []):
                out.append(None)
                continue
            ex = self.example["outputs"][pos]
            values = np.array([float(v) for v in ex["value"]], dtype=np.float64)
            out.append((values, tuple(ex["dimensions"])))
        return out


def mismatches(actual: np.ndarray, expected: np.ndarray, operand: Operand, relaxed: bool) -> list[str]:
    """Values of `actual` that break the O2 accuracy rule against `expected` (flat float64)."""
    got = np.asarray(actual).reshape(-1).astype(np.float64)
    if got.size != expected.size:
        return [f"{got.size} values, expected {expected.size}"]
    dtype = numpy_dtype(operand.type)
    if dtype.kind == "b":
        atol, rtol = 0.0, 0.0
    elif dtype.kind in "iu":
        atol, rtol = 1.0, 0.0
    elif operand.type in (OperandType.TENSOR_FLOAT16, OperandType.FLOAT16) or relaxed:
        atol, rtol = FLOAT16_TOL
    else:
        atol, rtol = FLOAT32_TOL
    bad = []
    for i, (g, e) in enumerate(zip(got, expected)):
        if not math.isfinite(e) or abs(e) > SKIP_ABOVE:
            continue
        if not abs(g - e) <= atol + rtol * abs(e):
            bad.append(f"[{i}] got {g}, expected {e}")
    return bad


def examples(case: dict[str, Any]) -> list[OpCase]:
    """Every example of a case, ready to run."""
    return [OpCase(case, ex) for ex in case["examples"]]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize `conformance_case` over the single-operation cases of the module's CONFORMANCE_FAMILIES."""
    if "conformance_case" not in metafunc.fixturenames:
        return
    families = getattr(metafunc.module, "CONFORMANCE_FAMILIES", set())
    cases = single_op_cases(set(families))
    metafunc.parametrize("conformance_case", [c for _, c in cases], ids=[i for i, _ in cases])


@pytest.fixture(scope="session")
def conformance_tools():
    """The helpers of this module, for tests that need them directly."""

    class Tools:
        load_cases = staticmethod(load_cases)
        examples = staticmethod(examples)
        mismatches = staticmethod(mismatches)

    return Tools
