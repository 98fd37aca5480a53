"""Valid subjects for the mutation tests, a seeded Source, and the reference validator's verdict on a mutated subject.

Subjects: a diverse sample of the public conformance models (the first case of every spec, plus the first
dynamic-output-shape case of every spec that has one) and small hand-built models covering what the vectors lack
(constants by reference, NO_VALUE operands, IF and WHILE, unknown input dimensions, several outputs). Requests
are built from the conformance examples with harness.case.simple_request.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from hypothesis import strategies as st

from harness.case import ConformanceDataMissing, load_vectors, simple_request
from harness.case.conformance import iter_vector_json
from harness.gen.mutations import Mutation
from harness.hal import (
    DataLocation,
    DriverBufferToken,
    Model,
    Operand,
    Operation,
    Request,
    RequestArgument,
    Subgraph,
    numpy_dtype,
    operand_byte_size,
)
from harness.hal import OperandLifeTime as L
from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.hal.memory import create_ashmem
from harness.reference import (
    Violation,
    validate_fenced_request,
    validate_model,
    validate_preparation,
    validate_request,
)
from tests.driver import models as driver_models
from tests.reference import conftest as reference_models

X = TypeVar("X")

# Request subjects hold two memfds each: keep their number well below common descriptor limits.
MAX_CONFORMANCE_REQUESTS = 160


_FLOAT_DTYPES = {16: np.float16, 32: np.float32, 64: np.float64}


class SeededSource:
    """A Source answering from a seeded PRNG; once `budget` answers are spent it answers minimally."""

    def __init__(self, seed: int, budget: int = 10_000) -> None:
        self._random = random.Random(seed)
        self._left = budget

    def _spend(self) -> bool:
        self._left -= 1
        return self._left >= 0

    def integer(self, lo: int, hi: int) -> int:
        return self._random.randint(lo, hi) if self._spend() else lo

    def boolean(self) -> bool:
        return self._random.random() < 0.5 if self._spend() else False

    def choice(self, seq: Sequence[X]) -> X:
        return seq[self.integer(0, len(seq) - 1)]

    def floats(self, lo: float, hi: float, *, width: int = 32) -> float:
        value = self._random.uniform(lo, hi) if self._spend() else lo
        rounded = float(_FLOAT_DTYPES[width](value))
        return rounded if lo <= rounded <= hi else lo

    def bytes(self, n: int) -> bytes:
        return self._random.randbytes(n) if self._spend() else b""

    @property
    def exhausted(self) -> bool:
        return self._left < 0


class DataSource:
    """A Source drawing from Hypothesis's `data()` strategy, so that Hypothesis can shrink the choices."""

    def __init__(self, data: Any) -> None:
        self._data = data

    def integer(self, lo: int, hi: int) -> int:
        return self._data.draw(st.integers(lo, hi))

    def boolean(self) -> bool:
        return self._data.draw(st.booleans())

    def choice(self, seq: Sequence[X]) -> X:
        return seq[self.integer(0, len(seq) - 1)]

    def floats(self, lo: float, hi: float, *, width: int = 32) -> float:
        dtype = _FLOAT_DTYPES[width]
        # Hypothesis wants bounds representable at the width: round them inwards.
        lo_w, hi_w = dtype(lo), dtype(hi)
        # (Compared as Python floats: numpy would compare at the narrow width.)
        lo_w = lo_w if float(lo_w) >= lo else np.nextafter(lo_w, dtype(np.inf))
        hi_w = hi_w if float(hi_w) <= hi else np.nextafter(hi_w, dtype(-np.inf))
        return self._data.draw(st.floats(float(lo_w), float(hi_w), width=width))

    def bytes(self, n: int) -> bytes:
        return self._data.draw(st.binary(max_size=n))

    @property
    def exhausted(self) -> bool:
        return False


# ---------------------------------------------------------------------------------------------------------------
# Hand-built models


def squeeze_no_value_model() -> Model:
    """out = SQUEEZE(x [1, 2, 1, 2], squeeze_dims omitted as a NO_VALUE operand) -> [2, 2]."""
    f32 = T.TENSOR_FLOAT32
    operands = [
        Operand(f32, [1, 2, 1, 2], 1, lifetime=L.SUBGRAPH_INPUT),
        Operand(T.TENSOR_INT32, [], 1, lifetime=L.NO_VALUE),
        Operand(f32, [2, 2], 0, lifetime=L.SUBGRAPH_OUTPUT),
    ]
    return Model(main=Subgraph(operands, [Operation(Op.SQUEEZE, [0, 1], [2])], [0], [2]))


def hand_built_models() -> dict[str, Model]:
    """Small valid models, by name."""
    return {
        "add": reference_models.add_model(),
        "quant_add": reference_models.quant_add_model(),
        "chain": reference_models.chain_model(),
        "constant_reference": reference_models.pool_model(),
        "per_channel_conv": reference_models.per_channel_conv_model(),
        "nested_if": reference_models.if_model(),
        "unknown_input_dims": reference_models.add_model(a_dims=(0,)),
        "unknown_output_dims": reference_models.add_model(out_dims=(0,)),
        "two_outputs": driver_models.add_then_mul_model(),
        "while": driver_models.counting_while_model(),
        "squeeze_no_value": squeeze_no_value_model(),
    }


# ---------------------------------------------------------------------------------------------------------------
# Conformance models and requests


@dataclass
class RequestSubject:
    """A valid model and a request valid for it (on the fenced path too when `fenced_valid`)."""

    name: str
    model: Model
    request: Request
    fenced_valid: bool


@functools.cache
def conformance_cases() -> tuple:
    """Per spec: its first case, its first dynamic-output-shape case and its first case with a per-channel
    quantized operand (empty without the vectors)."""
    first: dict[str, str] = {}
    dynamic: dict[str, str] = {}
    per_channel: dict[str, str] = {}
    try:
        for d, _ in iter_vector_json():
            first.setdefault(d["spec"], d["name"])
            if d.get("dynamicOutputShape"):
                dynamic.setdefault(d["spec"], d["name"])
            if any(o["type"] == T.TENSOR_QUANT8_SYMM_PER_CHANNEL.name for o in d["model"]["operands"]):
                per_channel.setdefault(d["spec"], d["name"])
        return tuple(load_vectors(names={*first.values(), *dynamic.values(), *per_channel.values()}))
    except ConformanceDataMissing:
        return ()


@functools.cache
def model_subjects() -> tuple[tuple[str, Model], ...]:
    """(name, valid model) for every subject model."""
    return (*((c.name, c.model) for c in conformance_cases()), *hand_built_models().items())


def _output_size(model: Model, index: int, expected: np.ndarray | None) -> int:
    if expected is not None:
        return max(int(expected.nbytes), 1)
    operand = model.main.operands[model.main.output_indexes[index]]
    return max(operand_byte_size(operand.type, operand.dimensions), 1)


def conformance_request(case: Any) -> RequestSubject:
    """A request for the case's first example; outputs carry their expected dimensions (valid when fenced)."""
    example = case.examples[0]
    model = case.model
    sizes = [_output_size(model, i, out) for i, out in enumerate(example.outputs)]
    dims = [list(out.shape) if out is not None else [] for out in example.outputs]
    # Zero-sized example inputs stand for omitted optional inputs, passed with hasNoValue as the public harnesses do.
    inputs = [None if x is None or x.size == 0 else x for x in example.inputs]
    built = simple_request(model, inputs, sizes, output_dims=dims)
    return RequestSubject(case.name, model, built.request, fenced_valid=True)


def hand_built_requests() -> list[RequestSubject]:
    """Requests for hand-built models, including a driver-buffer output and a model pool shared with outputs."""
    subjects = []
    model, request = reference_models.add_request()
    subjects.append(RequestSubject("add", model, request, fenced_valid=True))
    model, request = reference_models.add_request(reference_models.add_model(a_dims=(0,), out_dims=(0,)))
    request.outputs[0].dimensions = [2]
    subjects.append(RequestSubject("unknown_dims", model, request, fenced_valid=True))
    # The output lives in a driver-managed buffer named by a token.
    model, request = reference_models.add_request()
    request.pools.append(DriverBufferToken(7))
    request.outputs[0] = RequestArgument(location=DataLocation(1, 0, 0))
    subjects.append(RequestSubject("driver_buffer_output", model, request, fenced_valid=True))
    # A CONSTANT_REFERENCE model whose pool has room for outputs next to the constant: outputs may go there.
    pool = create_ashmem(64)
    model = driver_models.add_constant_model(pool, 0, np.array([1.0, 2.0], dtype=np.float32))
    io_pool = create_ashmem(16)
    request = Request(
        inputs=[RequestArgument(location=DataLocation(0, 0, 8), dimensions=[2])],
        outputs=[RequestArgument(location=DataLocation(1, 32, 8), dimensions=[2])],
        pools=[io_pool, pool],
    )
    subjects.append(RequestSubject("constant_pool_output", model, request, fenced_valid=True))
    model = driver_models.add_then_mul_model()
    built = simple_request(
        model,
        [np.ones((2, 2), numpy_dtype(T.TENSOR_FLOAT32))] * 2,
        [16, 16],
        output_dims=[[2, 2], [2, 2]],
    )
    subjects.append(RequestSubject("two_outputs", model, built.request, fenced_valid=True))
    return subjects


@functools.cache
def request_subjects() -> tuple[RequestSubject, ...]:
    """Every request subject: a sample of conformance requests (static and dynamic shapes) and hand-built ones."""
    cases = conformance_cases()
    static = [c for c in cases if not c.dynamic_output_shape]
    dynamic = [c for c in cases if c.dynamic_output_shape]
    step = max(1, len(static) // (MAX_CONFORMANCE_REQUESTS // 2))
    chosen = [*static[::step], *dynamic[: MAX_CONFORMANCE_REQUESTS // 2]]
    return (*(conformance_request(c) for c in chosen if c.examples), *hand_built_requests())


# ---------------------------------------------------------------------------------------------------------------
# The oracle's verdict


def verdict(m: Mutation, subject: Any, mutated: Any) -> list[Violation]:
    """What the reference validator finds in a mutated subject of the mutation's kind."""
    if m.kind == "model":
        return validate_model(mutated)
    if m.kind == "preparation":
        return validate_preparation(*mutated)
    model = subject[0]
    return (validate_fenced_request if m.kind == "fenced_request" else validate_request)(model, mutated)


# Where the reference validator labels a mutation with another V number than the rule it breaks, and why. When no
# signature of an operation accepts its operand counts, the validator reports its first signature's count mismatch:
# an operation with the right inputs but a wrong output count, whose first signature takes other inputs (implicit
# vs explicit padding), is reported as V17/V19 instead of V18/V20.
VALIDATOR_LABELS: dict[str, frozenset[str]] = {
    "required_output_removed": frozenset({"V17", "V19"}),
    "extra_output": frozenset({"V17", "V19"}),
    "operand_removed": frozenset({"V19"}),
}


def agrees(m: Mutation, found: list[Violation]) -> bool:
    """The validator rejects under the mutation's rule and reports nothing the mutation does not account for."""
    labels = VALIDATOR_LABELS.get(m.name, frozenset())
    return any(v.v in m.reported_as | labels for v in found) and all(v.v in m.allowed | labels for v in found)


def agrees_strictly(m: Mutation, found: list[Violation]) -> bool:
    """As `agrees`, without the validator's labelling exceptions."""
    return any(v.v in m.reported_as for v in found) and all(v.v in m.allowed for v in found)
