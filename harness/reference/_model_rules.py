"""Model rules about single operands, input/output index lists and the dataflow of one subgraph."""

from __future__ import annotations

import numbers
from collections import Counter
from collections.abc import Callable, Iterable

from harness.hal import (
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Subgraph,
    SymmPerChannelQuantParams,
    has_unknown_dimensions,
    is_extension_type,
    is_known_type,
    is_tensor_type,
    operand_byte_size,
)
from harness.hal.sizes import ZERO_POINT_RANGES
from harness.reference._names import lifetime_name, type_name
from harness.reference._rules import Violation, violation

T = OperandType
L = OperandLifeTime
UINT32_MAX = 0xFFFFFFFF

# Types whose dimensions must be empty (scalars, SUBGRAPH references and the OEM scalar).
_SCALAR_LIKE = frozenset({T.FLOAT16, T.FLOAT32, T.INT32, T.UINT32, T.BOOL, T.SUBGRAPH, T.OEM})
OEM_TYPES = frozenset({T.OEM, T.TENSOR_OEM_BYTE})

# Scale rule per type: (predicate on the scale, what the HAL expects). OEM types are not validated; the per-channel
# type's scale field is checked with its channel params (V24). NaN fails every predicate on purpose.
_ZERO_SCALE = (lambda s: s == 0.0, "a zero scale")
_POSITIVE_SCALE = (lambda s: s > 0.0, "a positive scale")
_SCALE_RULES: dict[int, tuple[Callable[[float], bool], str]] = {
    **{t: _ZERO_SCALE for t in (T.FLOAT16, T.FLOAT32, T.INT32, T.UINT32, T.BOOL, T.SUBGRAPH)},
    **{t: _ZERO_SCALE for t in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_BOOL8)},
    # TENSOR_INT32 is used both with a scale (quantized biases) and without one.
    T.TENSOR_INT32: (lambda s: s >= 0.0, "a non-negative scale"),
    **{
        t: _POSITIVE_SCALE
        for t in (
            T.TENSOR_QUANT8_ASYMM,
            T.TENSOR_QUANT8_ASYMM_SIGNED,
            T.TENSOR_QUANT8_SYMM,
            T.TENSOR_QUANT16_ASYMM,
            T.TENSOR_QUANT16_SYMM,
        )
    },
}
# Zero-point range per type (inclusive); the quantized types come from the HAL's table.
_ZERO_POINT_RANGES: dict[int, tuple[int, int]] = {
    **{
        t: (0, 0)
        for t in (
            T.FLOAT16,
            T.FLOAT32,
            T.INT32,
            T.UINT32,
            T.BOOL,
            T.SUBGRAPH,
            T.TENSOR_FLOAT16,
            T.TENSOR_FLOAT32,
            T.TENSOR_INT32,
            T.TENSOR_BOOL8,
        )
    },
    **ZERO_POINT_RANGES,
}
# Lifetimes whose value comes from an operation of the subgraph.
_WRITTEN = frozenset({L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT})
_EMPTY_LOCATION = frozenset({L.TEMPORARY_VARIABLE, L.SUBGRAPH_INPUT, L.SUBGRAPH_OUTPUT, L.NO_VALUE})
_KNOWN_LIFETIMES = frozenset(int(x) for x in L)


def pool_size(pool: object) -> int:
    """Byte size of a model or request shared-memory pool (0 if it has none)."""
    return int(getattr(pool, "size", 0))


def extension_prefix(value: int) -> int:
    """The extension prefix (high 16 bits) of an extension operand or operation type."""
    return value >> 16


def check_extension_declarations(model: Model) -> list[Violation]:
    """Extension names and prefixes must each be declared once."""
    found: list[Violation] = []
    for what, values in (
        ("name", [e.name for e in model.extension_name_to_prefix]),
        ("prefix", [e.prefix for e in model.extension_name_to_prefix]),
    ):
        for value, count in Counter(values).items():
            if count > 1:
                found.append(
                    violation("model.extension.declaration", f"extension {what} {value!r} declared {count} times")
                )
    return found


def check_operands(
    model: Model, subgraph: Subgraph, where: str, prefixes: set[int]
) -> tuple[list[Violation], set[int]]:
    """Per-operand rules; also returns the operands too broken for operation checks (type, dimensions, params)."""
    found: list[Violation] = []
    broken: set[int] = set()
    for index, operand in enumerate(subgraph.operands):
        label = f"{where} operand {index}"
        operand_type = int(operand.type)
        if not _type_is_valid(operand_type, prefixes):
            found.append(violation("model.operand.type", f"{label}: invalid operand type {operand_type}"))
            broken.add(index)
            continue
        if any(not 0 <= d <= UINT32_MAX for d in operand.dimensions):
            found.append(violation("model.operand.dimension_value", f"{label}: dimensions {operand.dimensions}"))
            broken.add(index)
            continue
        found += _check_dimensions(operand, label)
        if not isinstance(operand.scale, numbers.Real):
            # A malformed operand: the HAL's scale is a float. Nothing that compares scales can judge it further.
            found.append(violation("model.operand.scale", f"{label}: scale {operand.scale!r} is not a number"))
            broken.add(index)
        else:
            found += _check_scale_and_zero_point(operand, label)
        extra = _check_extra_params(operand, label)
        if extra:
            broken.add(index)  # operation checks would only trip over the same params again
        found += extra
        found += _check_lifetime_and_location(model, operand, label)
    return found, broken


def _type_is_valid(operand_type: int, prefixes: set[int]) -> bool:
    if is_extension_type(operand_type):
        return operand_type <= UINT32_MAX and extension_prefix(operand_type) in prefixes
    return is_known_type(operand_type)


def _check_dimensions(operand: Operand, label: str) -> list[Violation]:
    if int(operand.type) in _SCALAR_LIKE and operand.dimensions:
        return [
            violation(
                "model.operand.scalar_dimensions",
                f"{label}: {type_name(operand.type)} has dimensions {list(operand.dimensions)}",
            )
        ]
    return []


def _check_scale_and_zero_point(operand: Operand, label: str) -> list[Violation]:
    found: list[Violation] = []
    operand_type = int(operand.type)
    if is_extension_type(operand_type):
        scale_rule: tuple[Callable[[float], bool], str] | None = _ZERO_SCALE
        zero_point_range: tuple[int, int] | None = (0, 0)
    else:
        scale_rule = _SCALE_RULES.get(operand_type)
        zero_point_range = _ZERO_POINT_RANGES.get(operand_type)
    if scale_rule is not None and not scale_rule[0](operand.scale):
        found.append(
            violation(
                "model.operand.scale",
                f"{label}: {type_name(operand_type)} has scale {operand.scale}, expected {scale_rule[1]}",
            )
        )
    if zero_point_range is not None:
        lo, hi = zero_point_range
        if not lo <= operand.zero_point <= hi:
            found.append(
                violation(
                    "model.operand.zero_point",
                    f"{label}: {type_name(operand_type)} has zero point {operand.zero_point}, expected [{lo}, {hi}]",
                )
            )
    return found


def _check_extra_params(operand: Operand, label: str) -> list[Violation]:
    operand_type = int(operand.type)
    params = operand.extra_params
    if operand_type in OEM_TYPES:
        return []
    if operand_type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        return [violation("model.operand.channel_quant", f"{label}: {p}") for p in _channel_quant_problems(operand)]
    if is_extension_type(operand_type):
        if isinstance(params, SymmPerChannelQuantParams):
            return [violation("model.operand.extra_params", f"{label}: extension operand with per-channel params")]
        return []
    if params is not None:
        kind = "per-channel params" if isinstance(params, SymmPerChannelQuantParams) else "extension params"
        return [violation("model.operand.extra_params", f"{label}: {type_name(operand_type)} carries {kind}")]
    return []


def _channel_quant_problems(operand: Operand) -> list[str]:
    params = operand.extra_params
    if not isinstance(params, SymmPerChannelQuantParams):
        return ["TENSOR_QUANT8_SYMM_PER_CHANNEL without per-channel params"]
    problems = []
    if operand.scale != 0.0:
        problems.append(f"per-channel operand with a non-zero scale field {operand.scale}")
    rank = len(operand.dimensions)
    if not 0 <= params.channel_dim < rank:
        problems.append(f"channelDim {params.channel_dim} is not a dimension index of rank {rank}")
        return problems
    channels = operand.dimensions[params.channel_dim]
    if channels == 0:
        problems.append(f"channel dimension {params.channel_dim} is unknown")
    if len(params.scales) != channels:
        problems.append(f"{len(params.scales)} scales for {channels} channels")
    bad = [s for s in params.scales if not s > 0.0]
    if bad:
        problems.append(f"non-positive channel scales {bad}")
    return problems


def _check_lifetime_and_location(model: Model, operand: Operand, label: str) -> list[Violation]:
    lifetime = int(operand.lifetime)
    if lifetime not in _KNOWN_LIFETIMES:
        return [violation("model.operand.lifetime", f"{label}: invalid lifetime {lifetime}")]
    found: list[Violation] = []
    operand_type = int(operand.type)
    if (operand_type == T.SUBGRAPH) != (lifetime == L.SUBGRAPH):
        found.append(
            violation(
                "model.operand.subgraph_lifetime",
                f"{label}: type {type_name(operand_type)} with lifetime {lifetime_name(lifetime)}",
            )
        )
    loc = operand.location
    if lifetime in _EMPTY_LOCATION:
        if (loc.pool_index, loc.offset, loc.length) != (0, 0, 0):
            found.append(
                violation(
                    "model.operand.location",
                    f"{label}: {lifetime_name(lifetime)} operand has location "
                    f"(pool {loc.pool_index}, offset {loc.offset}, length {loc.length})",
                )
            )
    elif lifetime == L.SUBGRAPH:
        if loc.pool_index != 0 or loc.length != 0 or not 0 <= loc.offset < len(model.referenced):
            found.append(
                violation(
                    "model.subgraph.reference",
                    f"{label}: SUBGRAPH location (pool {loc.pool_index}, offset {loc.offset}, length {loc.length}) "
                    f"does not name one of {len(model.referenced)} referenced subgraphs",
                )
            )
    else:
        found += _check_constant(model, operand, label)
    return found


def _check_constant(model: Model, operand: Operand, label: str) -> list[Violation]:
    found: list[Violation] = []
    loc = operand.location
    if int(operand.lifetime) == L.CONSTANT_COPY:
        capacity: int | None = len(model.operand_values)
        if loc.pool_index != 0:
            found.append(violation("model.constant.pool_index", f"{label}: CONSTANT_COPY with pool {loc.pool_index}"))
        where = "operandValues"
    elif 0 <= loc.pool_index < len(model.pools):
        capacity = pool_size(model.pools[loc.pool_index])
        where = f"pool {loc.pool_index}"
    else:
        capacity = None
        found.append(
            violation(
                "model.constant.pool_index",
                f"{label}: CONSTANT_REFERENCE to pool {loc.pool_index} of {len(model.pools)}",
            )
        )
        where = ""
    if capacity is not None and (loc.offset < 0 or loc.length < 0 or loc.offset + loc.length > capacity):
        found.append(
            violation(
                "model.constant.bounds",
                f"{label}: offset {loc.offset} + length {loc.length} outside {where} of {capacity} bytes",
            )
        )
    operand_type = int(operand.type)
    if operand_type in OEM_TYPES or is_extension_type(operand_type):
        return found  # their sizes are not known to the HAL
    if is_tensor_type(operand_type) and has_unknown_dimensions(operand.dimensions):
        found.append(
            violation("model.constant.dimensions", f"{label}: constant tensor with dimensions {operand.dimensions}")
        )
        return found
    expected = operand_byte_size(operand_type, operand.dimensions)
    if loc.length != expected:
        found.append(
            violation("model.constant.length", f"{label}: location length {loc.length}, operand size {expected}")
        )
    return found


def check_io_indexes(subgraph: Subgraph, where: str) -> list[Violation]:
    """inputIndexes/outputIndexes: in range, unique, and exactly the SUBGRAPH_INPUT/SUBGRAPH_OUTPUT operands."""
    found: list[Violation] = []
    count = len(subgraph.operands)
    for kind, indexes, lifetime in (
        ("inputIndexes", subgraph.input_indexes, L.SUBGRAPH_INPUT),
        ("outputIndexes", subgraph.output_indexes, L.SUBGRAPH_OUTPUT),
    ):
        for position, index in enumerate(indexes):
            if not 0 <= index < count:
                found.append(violation("model.io.index", f"{where} {kind}[{position}] = {index} of {count} operands"))
            elif int(subgraph.operands[index].lifetime) != lifetime:
                found.append(
                    violation(
                        "model.io.lifetime",
                        f"{where} {kind}[{position}]: operand {index} has lifetime "
                        f"{lifetime_name(subgraph.operands[index].lifetime)}, expected {lifetime.name}",
                    )
                )
        for index, times in Counter(indexes).items():
            if times > 1:
                found.append(violation("model.io.duplicate", f"{where} {kind} lists operand {index} {times} times"))
        listed = set(indexes)
        for index, operand in enumerate(subgraph.operands):
            if int(operand.lifetime) == lifetime and index not in listed:
                found.append(
                    violation("model.io.lifetime", f"{where} operand {index} is {lifetime.name} but not in {kind}")
                )
    return found


def valid_indexes(indexes: Iterable[int], count: int) -> list[int]:
    """The indexes that name an operand of a subgraph with `count` operands."""
    return [i for i in indexes if 0 <= i < count]


def check_dataflow(subgraph: Subgraph, where: str) -> list[Violation]:
    """Operations in execution order: read after write, one writer per operand, writable outputs, consumer counts."""
    found: list[Violation] = []
    count = len(subgraph.operands)
    lifetimes = [int(o.lifetime) for o in subgraph.operands]
    # Anything not produced by an operation (inputs, constants, NO_VALUE, SUBGRAPH, even invalid lifetimes, which
    # are reported elsewhere) is known before the first operation runs.
    known = [lt not in _WRITTEN for lt in lifetimes]
    written = [False] * count
    consumers = [0] * count
    reported_early_read: set[int] = set()
    for op_index, operation in enumerate(subgraph.operations):
        label = f"{where} operation {op_index}"
        for k in valid_indexes(operation.inputs, count):
            consumers[k] += 1
            if not known[k] and k not in reported_early_read:
                reported_early_read.add(k)
                found.append(
                    violation("model.operation.read_before_write", f"{label} reads operand {k} before it is written")
                )
        for k in valid_indexes(operation.outputs, count):
            if lifetimes[k] not in _WRITTEN:
                found.append(
                    violation(
                        "model.operation.output_lifetime",
                        f"{label} writes operand {k} of lifetime {lifetime_name(lifetimes[k])}",
                    )
                )
            elif written[k]:
                found.append(violation("model.operand.written_twice", f"{label} writes operand {k} a second time"))
            written[k] = True
            known[k] = True
    for k, operand in enumerate(subgraph.operands):
        if lifetimes[k] in _WRITTEN and not written[k]:
            found.append(
                violation(
                    "model.operand.never_written",
                    f"{where} operand {k} ({lifetime_name(lifetimes[k])}) is never written",
                )
            )
        if operand.number_of_consumers != consumers[k]:
            found.append(
                violation(
                    "model.operand.consumers",
                    f"{where} operand {k}: numberOfConsumers {operand.number_of_consumers}, read {consumers[k]} times",
                )
            )
    return found
