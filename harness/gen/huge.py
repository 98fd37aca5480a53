"""Models whose size is huge (D26): one parameter or dimension drawn so large that the result cannot be held.

Each entry of HUGE_MODELS builds a small model around one operation whose output size comes from a huge parameter:
a FILL shape or TILE multiples, given as a constant or as a run-time input. Output dimensions are left unknown, so
only the driver can size the output; the request gives it a small buffer. The harness knows the output's shape by
plain arithmetic (`HugeModel.output_shape`); it never computes the values (the reference would exhaust memory too).

Sizes come from HUGE_ELEMENT_COUNTS: from half a GiB of float32 to products that overflow int32 and int64.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from harness.gen.source import Source
from harness.hal import DataLocation, Model, Operand, Operation, OperationType, Subgraph
from harness.hal import OperandLifeTime as L
from harness.hal import OperandType as T

_INT32_MAX = 2**31 - 1
# Two dimensions per size, by total: 512 MiB, 1 GiB and 3 GiB of float32 (within reach of a worker's address space:
# a driver that runs them grows its memory), past int32, and products near or past int64.
HUGE_SHAPES: tuple[tuple[int, int], ...] = (
    (2**13, 2**14),
    (2**14, 2**14),
    (3 * 2**13, 2**15),
    (2**16, 2**15 + 1),
    (_INT32_MAX, 3),
    (_INT32_MAX, _INT32_MAX),
)
_OUTPUT_BYTES = 64  # the output buffer the request gives: far too small for any of these


@dataclass
class HugeModel:
    """A model with one huge parameter, its inputs, and the output shape it must have."""

    name: str
    model: Model
    inputs: list[np.ndarray]
    output_shape: list[int]
    parameter: str  # which parameter is huge, for reports
    at_run_time: bool  # the huge parameter is a run-time input, not a constant
    request_json: dict = field(default_factory=dict)


def _i32(values: list[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int32)


def _parameter(values: np.ndarray, at_run_time: bool, blob: bytearray) -> Operand:
    """A TENSOR_INT32 parameter: a model input, or a CONSTANT_COPY appended to `blob`."""
    if at_run_time:
        return Operand(T.TENSOR_INT32, [values.size], 1, lifetime=L.SUBGRAPH_INPUT)
    location = DataLocation(0, len(blob), values.nbytes)
    blob.extend(values.tobytes())
    return Operand(T.TENSOR_INT32, [values.size], 1, lifetime=L.CONSTANT_COPY, location=location)


def _fill(shape: tuple[int, int], at_run_time: bool) -> HugeModel:
    blob = bytearray()
    dims = _i32(list(shape))
    value = np.float32(1.5).tobytes()
    operands = [
        _parameter(dims, at_run_time, blob),
        Operand(T.FLOAT32, [], 1, lifetime=L.CONSTANT_COPY, location=DataLocation(0, len(blob), 4)),
        Operand(T.TENSOR_FLOAT32, [0, 0], 0, lifetime=L.SUBGRAPH_OUTPUT),
    ]
    blob.extend(value)
    inputs = [0] if at_run_time else []
    graph = Subgraph(operands, [Operation(OperationType.FILL, [0, 1], [2])], inputs, [2])
    model = Model(graph, operand_values=bytes(blob))
    return HugeModel("fill_shape", model, [dims] if at_run_time else [], list(shape), "FILL shape", at_run_time)


def _tile(shape: tuple[int, int], at_run_time: bool) -> HugeModel:
    blob = bytearray()
    multiples = _i32([shape[0], shape[1]])
    operands = [
        Operand(T.TENSOR_FLOAT32, [1, 1], 1, lifetime=L.SUBGRAPH_INPUT),
        _parameter(multiples, at_run_time, blob),
        Operand(T.TENSOR_FLOAT32, [0, 0], 0, lifetime=L.SUBGRAPH_OUTPUT),
    ]
    model = Model(
        Subgraph(operands, [Operation(OperationType.TILE, [0, 1], [2])], [0, 1] if at_run_time else [0], [2]),
        operand_values=bytes(blob),
    )
    x = np.ones((1, 1), np.float32)
    return HugeModel("tile_multiples", model, [x, multiples] if at_run_time else [x], list(shape), "TILE multiples",
                     at_run_time)  # fmt: skip


HUGE_MODELS: dict[str, Callable[[tuple[int, int], bool], HugeModel]] = {"fill_shape": _fill, "tile_multiples": _tile}


def _request_json(inputs: list[np.ndarray]) -> dict:
    """One ashmem pool: the inputs back to back, 8-byte aligned, then a small output buffer."""
    args, offset = [], 0
    for value in inputs:
        args.append({"hasNoValue": False, "poolIndex": 0, "offset": offset, "length": value.nbytes,
                     "dimensions": list(value.shape)})  # fmt: skip
        offset += -(-value.nbytes // 8) * 8
    output = {"hasNoValue": False, "poolIndex": 0, "offset": offset, "length": _OUTPUT_BYTES, "dimensions": []}
    return {"inputs": args, "outputs": [output], "pools": [{"kind": "ashmem", "size": offset + _OUTPUT_BYTES}]}


def generate_huge(source: Source) -> HugeModel:
    """A model of HUGE_MODELS with a huge size from HUGE_SHAPES, constant or at run time, and its request."""
    name = source.choice(sorted(HUGE_MODELS))
    huge = HUGE_MODELS[name](source.choice(HUGE_SHAPES), source.boolean())
    huge.request_json = _request_json(huge.inputs)
    return huge
