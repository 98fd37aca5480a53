"""Conformance vectors for the neural-network operation families: load single-operation cases, build the
KernelContext and ShapeContext a catalogue entry consumes, and judge kernel outputs by REQUIREMENTS O2.

The vectors (format in shared/conformance/README.md) are found through $NNFUZZ_CONFORMANCE_DIR or in
shared/conformance beside the repository.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.hal import Operand, OperandLifeTime, OperandType, OperationType, SymmPerChannelQuantParams, numpy_dtype
from harness.ops import KernelContext, ShapeContext

FILES = ("aosp_cts_v1_0.jsonl.gz", "aosp_cts_v1_1.jsonl.gz", "aosp_cts_v1_2.jsonl.gz")
FLOAT32_TOLERANCE = (1e-5, 5 * 1.1920928955078125e-7)  # (atol, rtol)
FLOAT16_TOLERANCE = (5 * 0.0009765625, 5 * 0.0009765625)
SKIP_ABOVE = 1e3

FAMILIES = ("convolution", "pooling", "normalization", "resize", "recurrent", "hashing", "detection")


def vectors_dir() -> Path:
    """Directory of the conformance vectors."""
    env = os.environ.get("NNFUZZ_CONFORMANCE_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / ".." / "shared" / "conformance"


@functools.cache
def _load(file_name: str) -> tuple[dict[str, Any], ...]:
    path = vectors_dir() / file_name
    if not path.exists():
        return ()
    with gzip.open(path, "rt") as f:
        return tuple(json.loads(line) for line in f)


def single_op_cases(ops: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """(file, case) for every case whose model is one operation of the given types."""
    out = []
    for file_name in FILES:
        for case in _load(file_name):
            operations = case["model"]["operations"]
            if len(operations) == 1 and operations[0]["type"] in ops:
                out.append((file_name, case))
    return out


def _decode(values: list[Any], operand_type: int, dims: list[int]) -> np.ndarray:
    dtype = numpy_dtype(operand_type)
    if 0 in dims:
        values = []  # zero-sized tensors carry a placeholder value in the vectors
    if dtype.kind == "f":
        values = [float(v) for v in values]  # "nan", "inf" and "-inf" arrive as strings
    return np.array(values, dtype=dtype).reshape(dims)


def _operand(d: dict[str, Any], dims: list[int]) -> Operand:
    extra = None
    if "channelQuant" in d:
        cq = d["channelQuant"]
        extra = SymmPerChannelQuantParams(scales=list(cq["scales"]), channel_dim=cq["channelDim"])
    return Operand(
        type=OperandType[d["type"]],
        dimensions=list(dims),
        scale=d["scale"],
        zero_point=d["zeroPoint"],
        lifetime=OperandLifeTime[d["lifetime"]],
        extra_params=extra,
    )


@dataclass
class VectorExample:
    """One example of a single-operation case, ready for a kernel."""

    name: str
    op: OperationType
    relaxed: bool
    dynamic: bool
    ignored: list[int]
    input_operands: list[Operand | None]
    inputs: list[np.ndarray | None]
    output_operands: list[Operand]
    expected: list[np.ndarray]

    def kernel_context(self) -> KernelContext:
        """The KernelContext of this example."""
        return KernelContext(list(self.inputs), list(self.input_operands), list(self.output_operands), self.relaxed)

    def shape_context(self) -> ShapeContext:
        """The ShapeContext a validator sees: actual input shapes, values of constants only."""
        values = [
            v if op is not None and op.lifetime == OperandLifeTime.CONSTANT_COPY else None
            for v, op in zip(self.inputs, self.input_operands)
        ]
        shapes = [None if v is None else tuple(v.shape) for v in self.inputs]
        return ShapeContext(list(self.input_operands), shapes, values, list(self.output_operands))


def examples(case: dict[str, Any]) -> list[VectorExample]:
    """Every example of a single-operation case."""
    model = case["model"]
    operands = model["operands"]
    operation = model["operations"][0]
    out = []
    for example in case["examples"]:
        given = dict(zip(model["inputIndexes"], example["inputs"]))
        input_operands: list[Operand | None] = []
        inputs: list[np.ndarray | None] = []
        for index in operation["inputs"]:
            d = operands[index]
            if d["lifetime"] == "NO_VALUE":
                input_operands.append(None)
                inputs.append(None)
            elif "value" in d:
                input_operands.append(_operand(d, d["dimensions"]))
                inputs.append(_decode(d["value"], OperandType[d["type"]], d["dimensions"]))
            elif not given[index]["value"]:
                # The vectors give an omitted optional input as a model input with no data.
                input_operands.append(None)
                inputs.append(None)
            else:
                dims = given[index]["dimensions"]
                input_operands.append(_operand(d, dims))
                inputs.append(_decode(given[index]["value"], OperandType[d["type"]], dims))
        outputs = dict(zip(model["outputIndexes"], example["outputs"]))
        output_operands = [_operand(operands[i], operands[i]["dimensions"]) for i in operation["outputs"]]
        expected = [
            _decode(outputs[i]["value"], OperandType[operands[i]["type"]], outputs[i]["dimensions"])
            for i in operation["outputs"]
        ]
        out.append(
            VectorExample(
                name=case["name"],
                op=OperationType[operation["type"]],
                relaxed=bool(model.get("relaxComputationFloat32toFloat16")),
                dynamic=bool(case.get("dynamicOutputShape")),
                ignored=list(case.get("ignoredOutputs") or []),
                input_operands=input_operands,
                inputs=inputs,
                output_operands=output_operands,
                expected=expected,
            )
        )
    return out


def mismatches(actual: np.ndarray, expected: np.ndarray, operand: Operand, relaxed: bool) -> list[str]:
    """Violations of REQUIREMENTS O2 between a kernel output and an expected output."""
    if tuple(actual.shape) != tuple(expected.shape):
        return [f"shape {tuple(actual.shape)} != expected {tuple(expected.shape)}"]
    if actual.dtype != expected.dtype:
        return [f"dtype {actual.dtype} != expected {expected.dtype}"]
    t = OperandType(operand.type)
    a = actual.reshape(-1)
    e = expected.reshape(-1)
    if expected.dtype.kind == "b":
        bad = np.nonzero(a != e)[0]
        return [f"[{i}] {a[i]} != {e[i]}" for i in bad[:5]]
    if expected.dtype.kind == "f":
        atol, rtol = FLOAT16_TOLERANCE if (t == OperandType.TENSOR_FLOAT16 or relaxed) else FLOAT32_TOLERANCE
        ef = e.astype(np.float64)
        af = a.astype(np.float64)
        judged = np.isfinite(ef) & (np.abs(ef) <= SKIP_ABOVE)
    else:
        atol, rtol = 1.0, 0.0
        ef, af = e.astype(np.float64), a.astype(np.float64)
        judged = np.ones(e.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        bad_mask = judged & ~(np.abs(af - ef) <= atol + rtol * np.abs(ef))
    bad = np.nonzero(bad_mask)[0]
    return [f"[{i}] {af[i]!r} vs expected {ef[i]!r}" for i in bad[:5]] + (
        [f"... {len(bad)} mismatches in all"] if len(bad) > 5 else []
    )


def judge(example: VectorExample, actual: list[np.ndarray]) -> list[str]:
    """Every O2 violation of a kernel's outputs for one example (ignored outputs are compared by shape)."""
    problems = []
    if len(actual) != len(example.expected):
        return [f"{len(actual)} outputs, expected {len(example.expected)}"]
    for k, (a, e) in enumerate(zip(actual, example.expected)):
        a = np.asarray(a)
        if k in example.ignored:
            if tuple(a.shape) != tuple(e.shape):
                problems.append(f"output {k}: shape {tuple(a.shape)} != expected {tuple(e.shape)}")
            continue
        problems += [f"output {k}: {p}" for p in mismatches(a, e, example.output_operands[k], example.relaxed)]
    return problems


def run_graph(case: dict[str, Any], example_index: int = 0) -> tuple[list[np.ndarray], list[np.ndarray], list[Operand]]:
    """Run a multi-operation case through the catalogue's kernels in model order:
    (actual outputs, expected outputs, output operands)."""
    from harness.ops import get

    model = case["model"]
    operands = model["operands"]
    example = case["examples"][example_index]
    values: dict[int, np.ndarray | None] = {}
    for i, d in enumerate(operands):
        if d["lifetime"] == "NO_VALUE":
            values[i] = None
        elif "value" in d:
            values[i] = _decode(d["value"], OperandType[d["type"]], d["dimensions"])
    for i, given in zip(model["inputIndexes"], example["inputs"]):
        d = operands[i]
        values[i] = _decode(given["value"], OperandType[d["type"]], given["dimensions"])
    relaxed = bool(model.get("relaxComputationFloat32toFloat16"))
    for operation in model["operations"]:
        inputs = [values[i] for i in operation["inputs"]]
        input_operands = [None if v is None else _operand(operands[i], list(v.shape))
                          for i, v in zip(operation["inputs"], inputs)]
        output_operands = [_operand(operands[i], operands[i]["dimensions"]) for i in operation["outputs"]]
        spec = get(OperationType[operation["type"]])
        if spec is None or spec.kernel is None:
            raise LookupError(f"no kernel for {operation['type']}")
        ctx = KernelContext(inputs, input_operands, output_operands, relaxed)
        for i, out in zip(operation["outputs"], spec.kernel(ctx)):
            values[i] = np.asarray(out)
    actual = [values[i] for i in model["outputIndexes"]]
    expected = [
        _decode(e["value"], OperandType[operands[i]["type"]], e["dimensions"])
        for i, e in zip(model["outputIndexes"], example["outputs"])
    ]
    return actual, expected, [_operand(operands[i], operands[i]["dimensions"]) for i in model["outputIndexes"]]


# ------------------------------------------------------------------------------------------------------------------
# Builders for hand-made cases


@dataclass
class Given:
    """One operation input: its operand and stored value (None = omitted optional input)."""

    operand: Operand | None
    value: np.ndarray | None


def given_tensor(t: OperandType, data: Any, scale: float = 0.0, zero_point: int = 0, **kw: Any) -> Given:
    """A tensor input holding `data` in stored form."""
    value = np.asarray(data).astype(numpy_dtype(t))
    operand = Operand(type=t, dimensions=list(value.shape), scale=scale, zero_point=zero_point, **kw)
    return Given(operand, value)


def given_scalar(t: OperandType, v: Any) -> Given:
    """A constant scalar input."""
    return Given(Operand(type=t, lifetime=OperandLifeTime.CONSTANT_COPY), np.asarray(v, dtype=numpy_dtype(t)))


OMITTED = Given(None, None)


def output(t: OperandType, scale: float = 0.0, zero_point: int = 0) -> Operand:
    """An output operand of unknown dimensions."""
    return Operand(type=t, scale=scale, zero_point=zero_point)


def run_op(op: OperationType, inputs: list[Given], outputs: list[Operand]) -> list[np.ndarray]:
    """Run the catalogued kernel of `op`."""
    from harness.ops import get

    ctx = KernelContext([g.value for g in inputs], [g.operand for g in inputs], outputs)
    return [np.asarray(a) for a in get(op).kernel(ctx)]


def shape_of(op: OperationType, inputs: list[Given], outputs: list[Operand]) -> list[tuple[int, ...]]:
    """The catalogued shape function of `op`, every input value treated as a known constant."""
    from harness.ops import get

    ctx = ShapeContext(
        [g.operand for g in inputs],
        [None if g.value is None else tuple(g.value.shape) for g in inputs],
        [g.value for g in inputs],
        outputs,
    )
    return get(op).shape(ctx)


def signature_violations(op: OperationType, inputs: list[Given], outputs: list[Operand]) -> list[str]:
    """Violations of the best-fitting signature of `op` (empty: some signature accepts the operands cleanly)."""
    from harness.ops import get
    from harness.ops.common import signature_accepts

    ctx = ShapeContext(
        [g.operand for g in inputs],
        [None if g.value is None else tuple(g.value.shape) for g in inputs],
        [g.value for g in inputs],
        outputs,
    )
    types = [None if g.operand is None else g.operand.type for g in inputs]
    matching = [s for s in get(op).signatures if signature_accepts(s, types, [o.type for o in outputs])]
    if not matching:
        return ["no signature accepts these operand types"]
    return min(((s.check(ctx) if s.check else []) for s in matching), key=len)
