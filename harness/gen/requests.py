"""Execution requests for generated models: pool layouts, memory kinds, dimensions and deliberately small outputs.

`generate_request` runs the reference executor on the generated inputs (its result travels with the request, so a
target does not run it again), then lays the inputs and outputs out over one or several pools (ashmem, mmap_fd
with a non-zero offset, hardware_buffer_blob), with offsets, gaps and shared pools; dimensions are given or
omitted where the model knows them and left to the driver where it does not; a few outputs get buffers that are
too small, and the request records exactly which, so the oracle expects OUTPUT_INSUFFICIENT_SIZE on those.

harness.case.build_request turns the request JSON into a hal.Request over real shared memory holding the inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from harness.gen.model import GeneratedModel
from harness.gen.source import Source, chance
from harness.hal import (
    LOOP_TIMEOUT_DEFAULT_NS,
    LOOP_TIMEOUT_MAXIMUM_NS,
    ErrorStatus,
    Model,
    element_size,
    is_scalar_type,
)
from harness.hal.memory import MemoryKind
from harness.hal.sizes import SCALAR_TYPES
from harness.reference import ReferenceResult, run_model

__all__ = ["BOUNDARY_LOOP_TIMEOUTS", "GeneratedRequest", "RequestConfig", "generate_request", "output_byte_sizes"]

_ALIGN = 8
_MMAP_FD = MemoryKind.MMAP_FD.value
_HARDWARE_BUFFER = MemoryKind.HARDWARE_BUFFER.value
# Output buffer size used when the reference could not tell an output's size.
_FALLBACK_OUTPUT_BYTES = 64
_NONE = ErrorStatus.NONE

# loopTimeoutDuration values worth drawing: none given (the default applies), and the ends of the range a caller may
# give (0 and 1 ns: a WHILE cannot finish in time, any other model runs normally; the default; the maximum).
# Durations past the maximum are left out: the HAL forbids the caller to give them without saying what a driver does.
BOUNDARY_LOOP_TIMEOUTS: tuple[int | None, ...] = (
    None,
    None,
    None,
    None,
    0,
    1,
    LOOP_TIMEOUT_DEFAULT_NS,
    LOOP_TIMEOUT_MAXIMUM_NS,
)


@dataclass(frozen=True)
class RequestConfig:
    """What generate_request may produce."""

    kinds: tuple[str, ...] = (
        MemoryKind.ASHMEM.value,
        MemoryKind.MMAP_FD.value,
        MemoryKind.HARDWARE_BUFFER_BLOB.value,
    )
    max_pools: int = 3
    mmap_offset_probability: float = 0.5  # an mmap_fd pool starts at a non-zero offset in its file
    gap_probability: float = 0.3  # unused bytes before an argument
    omit_known_dims_probability: float = 0.5  # an argument whose dimensions the model knows gives none
    output_dims_probability: float = 0.3  # an output the model leaves unknown gets its actual dimensions anyway
    too_small_probability: float = 0.05  # an output buffer smaller than the output
    slack_probability: float = 0.2  # an output buffer larger than needed
    loop_timeout_ns: int | None = None  # passed to the reference executor
    # Loop timeouts each request draws one of instead (empty: loop_timeout_ns always); a target drawing them must
    # pass the request's loop_timeout_ns to the execution, as the reference ran with it.
    loop_timeouts: tuple[int | None, ...] = ()


@dataclass
class GeneratedRequest:
    """A request in the case format, with what the reference expects of it."""

    request_json: dict
    expected: ReferenceResult
    insufficient: frozenset[int] = frozenset()  # output positions whose buffer is deliberately too small
    output_sizes: list[int | None] = field(default_factory=list)  # bytes each output needs (None = unknown)
    loop_timeout_ns: int | None = None  # the loop timeout the expected result was computed with

    @property
    def too_small(self) -> frozenset[int]:
        """Same as `insufficient`."""
        return self.insufficient

    @property
    def output_lengths(self) -> list[int]:
        """The buffer length given to each output."""
        return [int(a["length"]) for a in self.request_json["outputs"]]


def output_byte_sizes(model: Model, expected: ReferenceResult) -> list[int | None]:
    """Bytes each main output needs: from the reference's outputs, else from fully known dimensions."""
    sizes: list[int | None] = []
    main = model.main
    ok = expected.status == _NONE
    for k, index in enumerate(main.output_indexes):
        operand = main.operands[index]
        if ok and k < len(expected.outputs):
            sizes.append(element_size(operand.type) * _count(expected.outputs[k]))
        elif is_scalar_type(operand.type):
            sizes.append(element_size(operand.type))
        elif operand.dimensions and 0 not in operand.dimensions:
            sizes.append(element_size(operand.type) * math.prod(operand.dimensions))
        else:
            sizes.append(None)
    return sizes


def _shape(value: object) -> tuple[int, ...]:
    """np.shape(value), without the dispatch for arrays."""
    return value.shape if type(value) is np.ndarray else np.shape(value)


def _count(value: object) -> int:
    """math.prod(np.shape(value)): the number of elements."""
    return value.size if type(value) is np.ndarray else math.prod(np.shape(value))


class _Layout:
    """Places argument regions over pools without overlaps."""

    def __init__(self, src: Source, cfg: RequestConfig) -> None:
        self.src = src
        self.cfg = cfg
        count = src.integer(1, max(1, cfg.max_pools))
        self.pools: list[dict] = []
        for _ in range(count):
            kind = src.choice(cfg.kinds)
            desc: dict = {"kind": kind, "size": 0}
            if kind == _MMAP_FD and chance(src, cfg.mmap_offset_probability):
                desc["offset"] = src.integer(1, 9000)
            self.pools.append(desc)
        self.ends = [0] * count

    def place(self, length: int) -> tuple[int, int]:
        """(pool, offset) of a new region of `length` bytes after everything placed so far in that pool."""
        src, ends = self.src, self.ends
        pool = src.integer(0, len(ends) - 1)
        offset = -(-ends[pool] // _ALIGN) * _ALIGN
        if chance(src, self.cfg.gap_probability):
            offset += _ALIGN * src.integer(1, 4)
        ends[pool] = offset + length
        return pool, offset

    def finish(self) -> list[dict]:
        """The pool descriptions, sized to hold their regions."""
        for desc, end in zip(self.pools, self.ends):
            size = max(end, 1)
            if desc["kind"] == _HARDWARE_BUFFER:
                size = -(-size // 4) * 4
            desc["size"] = size
        return self.pools


def generate_request(
    source: Source,
    generated: GeneratedModel,
    config: RequestConfig = RequestConfig(),  # noqa: B008
) -> GeneratedRequest:
    """A request for the generated model and inputs, with the reference's expected result."""
    model = generated.model
    main = model.main
    loop_timeout = source.choice(config.loop_timeouts) if config.loop_timeouts else config.loop_timeout_ns
    expected = run_model(model, generated.inputs, loop_timeout_ns=loop_timeout)
    layout = _Layout(source, config)
    operands = main.operands
    inputs_json = []
    for index, value in zip(main.input_indexes, generated.inputs):
        operand = operands[index]
        if value is None:
            inputs_json.append({"hasNoValue": True, "poolIndex": 0, "offset": 0, "length": 0, "dimensions": []})
            continue
        length = int(value.nbytes if isinstance(value, np.ndarray) else np.asarray(value).nbytes)
        pool, offset = layout.place(length)
        dimensions = operand.dimensions
        known = bool(dimensions) and 0 not in dimensions
        scalar = operand.type in SCALAR_TYPES
        give = not scalar and (not known or not chance(source, config.omit_known_dims_probability))
        inputs_json.append(
            {
                "hasNoValue": False,
                "poolIndex": pool,
                "offset": offset,
                "length": length,
                "dimensions": [int(x) for x in _shape(value)] if give else [],
            }
        )
    sizes = output_byte_sizes(model, expected)
    outputs_json = []
    too_small = set()
    ok = expected.status == _NONE
    for k, index in enumerate(main.output_indexes):
        operand = operands[index]
        size = sizes[k]
        length = size if size is not None else _FALLBACK_OUTPUT_BYTES
        if size and chance(source, config.too_small_probability):
            length = source.integer(0, size - 1)
            too_small.add(k)
        elif chance(source, config.slack_probability):
            length += element_size(operand.type) * source.integer(1, 8)
        pool, offset = layout.place(length)
        dims: list[int] = []
        dimensions = operand.dimensions
        known = bool(dimensions) and 0 not in dimensions
        actual = _shape(expected.outputs[k]) if ok else None
        if operand.type not in SCALAR_TYPES:
            if known and not chance(source, config.omit_known_dims_probability):
                dims = [int(x) for x in operand.dimensions]
            elif not known and actual is not None and chance(source, config.output_dims_probability):
                dims = [int(x) for x in actual]
        outputs_json.append(
            {"hasNoValue": False, "poolIndex": pool, "offset": offset, "length": int(length), "dimensions": dims}
        )
    request_json = {"pools": layout.finish(), "inputs": inputs_json, "outputs": outputs_json}
    return GeneratedRequest(request_json, expected, frozenset(too_small), sizes, loop_timeout)
