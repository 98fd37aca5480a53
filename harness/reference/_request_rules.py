"""Request rules: argument counts, locations inside pools, dimensions against the model, overlapping outputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.hal import (
    DriverBufferToken,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Request,
    RequestArgument,
    has_unknown_dimensions,
    is_known_type,
    is_scalar_type,
    merge_dimensions,
    operand_byte_size,
)
from harness.reference._model_rules import OEM_TYPES, UINT32_MAX, pool_size
from harness.reference._rules import Violation, violation


@dataclass(frozen=True)
class _Region:
    """Bytes an argument occupies: a whole driver buffer (token) or [start, end) of one shared memory."""

    label: str
    is_output: bool
    memory: tuple[str, int]  # ("memory", id of the pool object) or ("token", driver buffer token)
    start: int = 0
    end: int = 0
    whole: bool = False

    def overlaps(self, other: _Region) -> bool:
        if self.memory != other.memory:
            return False
        if self.whole or other.whole:
            return True
        return self.start < other.end and other.start < self.end


def _memory_key(pool: object) -> tuple[str, int]:
    # Identity, not equality: two pools are the same memory only if they are the same object.
    return ("memory", id(pool))


def check_request(model: Model, request: Request, *, fenced: bool) -> list[Violation]:
    """Every request rule; `fenced` adds the fenced-execution rule on output dimensions."""
    found: list[Violation] = []
    main = model.main
    for kind, args, indexes in (
        ("inputs", request.inputs, main.input_indexes),
        ("outputs", request.outputs, main.output_indexes),
    ):
        if len(args) != len(indexes):
            found.append(
                violation("request.argument_count", f"request has {len(args)} {kind}, the model has {len(indexes)}")
            )
    for index, pool in enumerate(request.pools):
        if isinstance(pool, DriverBufferToken) and pool.token <= 0:
            found.append(violation("request.pool.token", f"pool {index} is driver buffer token {pool.token}"))
    regions: list[_Region] = []
    for is_output, args, indexes in (
        (False, request.inputs, main.input_indexes),
        (True, request.outputs, main.output_indexes),
    ):
        for position, (arg, operand_index) in enumerate(zip(args, indexes)):
            label = f"{'output' if is_output else 'input'} {position}"
            operand = main.operands[operand_index] if 0 <= operand_index < len(main.operands) else None
            problems, region = _check_argument(request, arg, operand, label, is_output, fenced)
            found += problems
            if region is not None:
                regions.append(region)
    found += _check_overlaps(model, regions)
    return found


def _check_argument(
    request: Request, arg: RequestArgument, operand: Operand | None, label: str, is_output: bool, fenced: bool
) -> tuple[list[Violation], _Region | None]:
    loc = arg.location
    if arg.has_no_value:
        if (loc.pool_index, loc.offset, loc.length) != (0, 0, 0) or arg.dimensions:
            return [
                violation(
                    "request.no_value.details",
                    f"{label} has no value but location (pool {loc.pool_index}, offset {loc.offset}, "
                    f"length {loc.length}) and dimensions {list(arg.dimensions)}",
                )
            ], None
        return [], None
    found: list[Violation] = []
    region: _Region | None = None
    if not 0 <= loc.pool_index < len(request.pools):
        found.append(violation("request.pool.index", f"{label}: pool {loc.pool_index} of {len(request.pools)}"))
    else:
        pool = request.pools[loc.pool_index]
        if isinstance(pool, DriverBufferToken):
            if loc.offset != 0 or loc.length != 0:
                found.append(
                    violation(
                        "request.pool.driver_buffer_location",
                        f"{label}: driver buffer pool {loc.pool_index} with offset {loc.offset}, length {loc.length}",
                    )
                )
            region = _Region(label, is_output, ("token", pool.token), whole=True)
        else:
            size = pool_size(pool)
            if loc.offset < 0 or loc.length < 0 or loc.offset + loc.length > size:
                found.append(
                    violation(
                        "request.pool.bounds",
                        f"{label}: offset {loc.offset} + length {loc.length} outside pool {loc.pool_index} "
                        f"of {size} bytes",
                    )
                )
            else:
                region = _Region(label, is_output, _memory_key(pool), loc.offset, loc.offset + loc.length)
    if operand is not None:
        in_driver_buffer = region is not None and region.whole
        found += _check_dimensions(arg, operand, label, is_output, fenced, in_driver_buffer)
    return found, region


def _check_dimensions(
    arg: RequestArgument, operand: Operand, label: str, is_output: bool, fenced: bool, in_driver_buffer: bool
) -> list[Violation]:
    operand_type = int(operand.type)
    requested = list(arg.dimensions)
    model_dims = list(operand.dimensions)
    if any(not 0 <= d <= UINT32_MAX for d in requested):
        return [violation("request.dimensions.conflict", f"{label}: dimensions {requested}")]
    if is_scalar_type(operand_type):
        # A scalar has no shape to conflict with; its size is that of its type.
        merged: list[int] | None = []
    else:
        merged = merge_dimensions(model_dims, requested)
    if merged is None:
        return [
            violation("request.dimensions.conflict", f"{label}: dimensions {requested} vs the model's {model_dims}")
        ]
    # Only the HAL's own tensor types have a rank the request must complete; extension types are opaque here.
    sized = is_known_type(operand_type) and operand_type not in OEM_TYPES
    tensor = sized and not is_scalar_type(operand_type) and operand_type != OperandType.SUBGRAPH
    found: list[Violation] = []
    if not is_output:
        if 0 in requested or (tensor and has_unknown_dimensions(merged)):
            found.append(
                violation(
                    "request.dimensions.unknown_input",
                    f"{label}: dimensions stay {merged} (model {model_dims}, request {requested})",
                )
            )
        elif sized and not in_driver_buffer:
            expected = operand_byte_size(operand_type, merged)
            if arg.location.length != expected:
                found.append(
                    violation("request.input.length", f"{label}: length {arg.location.length}, size {expected} bytes")
                )
    elif fenced and tensor and has_unknown_dimensions(merged):
        found.append(
            violation("request.fenced.unspecified_output", f"{label}: dimensions {merged} in a fenced execution")
        )
    return found


def _check_overlaps(model: Model, regions: Sequence[_Region]) -> list[Violation]:
    found: list[Violation] = []
    for i, region in enumerate(regions):
        if not region.is_output:
            continue
        for j, other in enumerate(regions):
            if j == i or (other.is_output and j > i):
                continue  # each pair of outputs once
            if region.overlaps(other):
                found.append(violation("request.output.overlap", f"{region.label} overlaps {other.label}"))
    found += _check_constant_overlaps(model, regions)
    return found


def _check_constant_overlaps(model: Model, regions: Sequence[_Region]) -> list[Violation]:
    """Outputs placed in a memory that also holds the model's CONSTANT_REFERENCE values must avoid them."""
    found: list[Violation] = []
    constants: list[_Region] = []
    for where, graph in [("main", model.main), *((f"referenced[{i}]", g) for i, g in enumerate(model.referenced))]:
        for index, operand in enumerate(graph.operands):
            loc = operand.location
            if int(operand.lifetime) == OperandLifeTime.CONSTANT_REFERENCE and 0 <= loc.pool_index < len(model.pools):
                constants.append(
                    _Region(
                        f"{where} operand {index}",
                        False,
                        _memory_key(model.pools[loc.pool_index]),
                        loc.offset,
                        loc.offset + loc.length,
                    )
                )
    for region in regions:
        if not region.is_output or region.whole:
            continue
        for constant in constants:
            if region.overlaps(constant):
                found.append(
                    violation("request.output.overlaps_constant", f"{region.label} overlaps constant {constant.label}")
                )
    return found
