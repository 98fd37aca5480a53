"""Checks of one operand on its own: type, dimensions, quantization parameters, extra parameters and location."""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Container, Sequence
from dataclasses import dataclass

from driver_under_test.errors import invalid
from driver_under_test.faults import FaultSet, define
from driver_under_test.validation.limits import Limits, bounded_element_count, exhausted
from harness.hal import (
    DataLocation,
    Operand,
    OperandLifeTime,
    OperandType,
    SymmPerChannelQuantParams,
    element_size,
    is_extension_type,
    is_scalar_type,
)
from harness.hal.sizes import QUANTIZED_TYPES, ZERO_POINT_RANGES

UINT32_MAX = 2**32 - 1
_LT = OperandLifeTime
_HAL_TYPES = frozenset(int(t) for t in OperandType)
_LIFETIMES = frozenset(int(lt) for lt in OperandLifeTime)
_OEM_TYPES = frozenset({OperandType.OEM, OperandType.TENSOR_OEM_BYTE})
_CONSTANT = frozenset({_LT.CONSTANT_COPY, _LT.CONSTANT_REFERENCE})
# Lifetimes whose location must be all zeros.
# Messages name types: looking a name up beats asking the enum for it.
_TYPE_NAMES = {int(t): t.name for t in OperandType}
_QUANT8_ASYMM = frozenset({OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED})

ABORT_ON_UNKNOWN_OPERAND_TYPE = define(
    "abort_on_unknown_operand_type",
    "robustness",
    "Looks an operand's element size up in a fixed per-type table before checking that the type exists: a type "
    "the HAL does not define (e.g. -1, 16, 9999, 10002; extension-shaped types excepted) reads past the table "
    "and the process dies with SIGABRT instead of answering INVALID_ARGUMENT (breaks V2, D25). Reached by "
    "getSupportedOperations and prepareModel.",
).name
SCALAR_DIMS_UNCHECKED = define(
    "scalar_dims_unchecked",
    "validation",
    "Never checks that scalar operands (FLOAT32, INT32, UINT32, BOOL, FLOAT16, SUBGRAPH, OEM) have no "
    "dimensions: a scalar with dimensions is accepted instead of INVALID_ARGUMENT (breaks V3). A scalar with "
    "dimensions [1] then runs normally; other dimensions of a constant scalar fail preparation later with "
    "GENERAL_FAILURE.",
).name
ZERO_POINT_RANGE_UNCHECKED = define(
    "zero_point_range_unchecked",
    "validation",
    "Stores the zero point of TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED operands without checking it "
    "against the type's range ([0, 255] and [-128, 127]): such a model is accepted instead of INVALID_ARGUMENT "
    "(breaks V5) and runs with the out-of-range zero point.",
).name
CONSTANT_LIFETIME_CHECK_SKIPPED = define(
    "constant_lifetime_check_skipped",
    "validation",
    "Checks constant locations against their storage only for CONSTANT_REFERENCE: a CONSTANT_COPY whose "
    "offset + length runs past the end of operandValues is accepted instead of INVALID_ARGUMENT (breaks V23); "
    "getSupportedOperations answers NONE and prepareModel launches with NONE, then fails with GENERAL_FAILURE "
    "when the constant is read.",
).name


def as_int(value: object, what: str, rule: str = "model.malformed") -> int:
    """`value` as a Python int; INVALID_ARGUMENT under `rule` if it is not an integer (bools are not)."""
    if type(value) is int:  # the common case, first: validation runs on every fuzzed model
        return value
    if isinstance(value, bool):
        raise invalid(f"{what} must be an integer, got a bool", rule)
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise invalid(f"{what} must be an integer, got {type(value).__name__}", rule) from None


def as_uint32(value: object, what: str, rule: str) -> int:
    """`value` as an int in the HAL's uint32 range, else INVALID_ARGUMENT under `rule`."""
    v = as_int(value, what, rule)
    if not 0 <= v <= UINT32_MAX:
        raise invalid(f"{what} is {v}, outside 0..{UINT32_MAX}", rule)
    return v


def as_list(values: object, what: str, rule: str = "model.malformed") -> Sequence[object]:
    """`values` if it is a list or tuple, else INVALID_ARGUMENT under `rule`."""
    if not isinstance(values, list | tuple):
        raise invalid(f"{what} must be a list, got {type(values).__name__}", rule)
    return values


def type_name(t: int) -> str:
    """The HAL name of an operand type, or its number."""
    if t.__class__ is int or t.__class__ is OperandType:
        return _TYPE_NAMES.get(t) or str(t)
    try:
        return OperandType(t).name
    except ValueError:
        return str(t)


# Not frozen: a frozen dataclass pays for each field at construction, and one is built per validated model.
@dataclass(slots=True)
class ModelContext:
    """What operand checks need from the whole model (read only)."""

    operand_values_size: int
    pool_sizes: Sequence[int]
    subgraph_count: int  # len(model.referenced)
    extension_prefixes: Container[int]
    limits: Limits
    faults: FaultSet
    # For plain_operand_bytes: the rank limit, and a bound on the element count that keeps each dimension a uint32
    # (min(limits.max_elements_per_operand, UINT32_MAX)).
    max_rank: int
    element_bound: int


def check_type(operand_type: object, what: str, prefixes: Container[int], faults: FaultSet | None = None) -> int:
    """The operand type as an int; V2 for values the HAL does not define or undeclared extensions."""
    t = as_int(operand_type, f"{what} type")
    if t in _HAL_TYPES:
        return t
    if faults is not None and faults.active(ABORT_ON_UNKNOWN_OPERAND_TYPE) and not is_extension_type(t):
        # The planted bug: the element-size table is indexed with an unchecked type.
        os.abort()
    if is_extension_type(t) and t <= UINT32_MAX and (t >> 16) in prefixes:
        return t
    if is_extension_type(t) and t <= UINT32_MAX:
        raise invalid(f"{what} has extension type {t:#x} whose prefix {t >> 16} is not declared", "V2.operand_type")
    raise invalid(f"{what} has type {t}, which is not an operand type", "V2.operand_type")


def check_dimensions(
    t: int, dimensions: object, what: str, limits: Limits, faults: FaultSet | None = None
) -> list[int]:
    """The dimensions as ints; limits first, then V3 for scalars with dimensions."""
    dims = as_list(dimensions, f"{what} dimensions")
    if len(dims) > limits.max_rank:
        raise exhausted("max_rank", f"{what} has rank {len(dims)}, above this driver's limit of {limits.max_rank}")
    out = [as_int(d, f"{what} dimension {k}") for k, d in enumerate(dims)]
    scalar_rank_checked = faults is None or not faults.active(SCALAR_DIMS_UNCHECKED)
    if out and scalar_rank_checked and (is_scalar_type(t) or t in (OperandType.SUBGRAPH, OperandType.OEM)):
        raise invalid(f"{what} is a {type_name(t)} scalar but has dimensions {out}", "V3.scalar_rank")
    check_dimension_values(out, what, limits)
    return out


def check_dimension_values(dims: Sequence[int], what: str, limits: Limits, rule: str = "model.dimension_value") -> None:
    """No negative dimension, the element-count limit, then the uint32 range of each dimension."""
    for k, d in enumerate(dims):
        if d < 0:
            raise invalid(f"{what} dimension {k} is {d}; dimensions are unsigned", rule)
    # The limit comes before the uint32 range so that a huge shape is reported as a resource problem.
    bounded_element_count(dims, limits, what)
    for k, d in enumerate(dims):
        if d > UINT32_MAX:
            raise invalid(f"{what} dimension {k} is {d}, above {UINT32_MAX}", rule)


def check_quantization(t: int, scale: object, zero_point: object, what: str, faults: FaultSet | None = None) -> None:
    """V4 scale and V5 zero point for the type (OEM and extension types are the vendor's business)."""
    if t in _OEM_TYPES or is_extension_type(t):
        return
    try:
        s = float(scale)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise invalid(f"{what} scale must be a number, got {type(scale).__name__}", "model.malformed") from None
    if not math.isfinite(s):
        raise invalid(f"{what} has a non-finite scale {s}", "V4.scale")
    if t in QUANTIZED_TYPES and t != OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        if s <= 0:
            raise invalid(f"{what} is {type_name(t)} with scale {s}; it must be > 0", "V4.scale")
    elif t == OperandType.TENSOR_INT32:
        # TENSOR_INT32 carries a scale only as a quantized bias; 0 means none.
        if s < 0:
            raise invalid(f"{what} is TENSOR_INT32 with negative scale {s}", "V4.scale")
    elif s != 0:
        raise invalid(f"{what} is {type_name(t)} with scale {s}; it must be 0", "V4.scale")
    zp = as_int(zero_point, f"{what} zero point")
    if t in _QUANT8_ASYMM and faults is not None and faults.active(ZERO_POINT_RANGE_UNCHECKED):
        return
    lo, hi = ZERO_POINT_RANGES.get(t, (0, 0))
    if not lo <= zp <= hi:
        raise invalid(f"{what} is {type_name(t)} with zero point {zp}; it must be in {lo}..{hi}", "V5.zero_point")


def check_extra_params(t: int, dims: list[int], extra: object, what: str) -> None:
    """V24: per-channel parameters exactly on TENSOR_QUANT8_SYMM_PER_CHANNEL, consistent with its shape."""
    if t == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        if not isinstance(extra, SymmPerChannelQuantParams):
            raise invalid(f"{what} is per-channel quantized but has no channel parameters", "V24.per_channel_params")
        channel_dim = as_int(extra.channel_dim, f"{what} channelDim")
        scales = as_list(extra.scales, f"{what} channel scales")
        if not 0 <= channel_dim < len(dims):
            raise invalid(f"{what} has channelDim {channel_dim} for rank {len(dims)}", "V24.per_channel_params")
        if len(scales) != dims[channel_dim]:
            raise invalid(
                f"{what} has {len(scales)} channel scales for dimension {channel_dim} of size {dims[channel_dim]}",
                "V24.per_channel_params",
            )
        for k, s in enumerate(scales):
            try:
                ok = math.isfinite(float(s)) and float(s) > 0  # type: ignore[arg-type]
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise invalid(f"{what} channel scale {k} is {s!r}; it must be > 0", "V24.per_channel_params")
        return
    if extra is None:
        return
    if isinstance(extra, bytes | bytearray) and (is_extension_type(t) or t in _OEM_TYPES):
        return
    raise invalid(f"{what} is {type_name(t)} but carries extra parameters {extra!r}", "V24.per_channel_params")


def _check_constant_location(
    t: int, dims: list[int], lifetime: int, loc: DataLocation, what: str, ctx: ModelContext
) -> int:
    pool_index = as_uint32(loc.pool_index, f"{what} location pool index", "V23.constant_location")
    offset = as_uint32(loc.offset, f"{what} location offset", "V23.constant_location")
    length = as_uint32(loc.length, f"{what} location length", "V23.constant_location")
    if not is_scalar_type(t) and t not in _OEM_TYPES and not is_extension_type(t):
        if not dims or 0 in dims:
            raise invalid(f"{what} is a constant tensor with unspecified dimensions {dims}", "V23.constant_dimensions")
    if lifetime == _LT.CONSTANT_COPY:
        if pool_index != 0:
            raise invalid(f"{what} is CONSTANT_COPY with pool index {pool_index}; it must be 0",
                          "V23.constant_location")  # fmt: skip
        if offset + length > ctx.operand_values_size and not ctx.faults.active(CONSTANT_LIFETIME_CHECK_SKIPPED):
            raise invalid(
                f"{what} reads operandValues[{offset}:{offset + length}] but operandValues has "
                f"{ctx.operand_values_size} bytes",
                "V23.constant_location",
            )
    else:
        if pool_index >= len(ctx.pool_sizes):
            raise invalid(
                f"{what} is CONSTANT_REFERENCE to pool {pool_index} but the model has {len(ctx.pool_sizes)} pools",
                "V23.constant_location",
            )
        size = ctx.pool_sizes[pool_index]
        if offset + length > size:
            raise invalid(
                f"{what} reads pool {pool_index} [{offset}:{offset + length}] but the pool has {size} bytes",
                "V23.constant_location",
            )
    # OEM and extension operands have vendor-defined sizes.
    if t not in _OEM_TYPES and not is_extension_type(t):
        expected = element_size(t) * (1 if is_scalar_type(t) else math.prod(dims))
        if length != expected:
            raise invalid(
                f"{what} has a constant of {length} bytes; a {type_name(t)} of dimensions {dims} has {expected}",
                "V23.constant_length",
            )
    return length


def check_location(t: int, dims: list[int], lifetime: int, loc: object, what: str, ctx: ModelContext) -> int:
    """V23 (constants), V25 (subgraph references) and empty locations elsewhere; returns the constant's bytes."""
    if not isinstance(loc, DataLocation):
        raise invalid(f"{what} location must be a DataLocation", "model.malformed")
    if lifetime in _CONSTANT:
        return _check_constant_location(t, dims, lifetime, loc, what, ctx)
    pool_index = as_int(loc.pool_index, f"{what} location pool index")
    offset = as_int(loc.offset, f"{what} location offset")
    length = as_int(loc.length, f"{what} location length")
    if lifetime == _LT.SUBGRAPH:
        if pool_index != 0 or length != 0:
            raise invalid(f"{what} is a subgraph reference with pool index or length set", "V25.subgraph_reference")
        if not 0 <= offset < ctx.subgraph_count:
            raise invalid(
                f"{what} references subgraph {offset} but the model has {ctx.subgraph_count} referenced subgraphs",
                "V25.subgraph_reference",
            )
        return 0
    if pool_index or offset or length:
        raise invalid(
            f"{what} has lifetime {_LT(lifetime).name} but a location {pool_index}/{offset}/{length}; it must be empty",
            "V23.non_constant_location",
        )
    return 0


def check_lifetime(t: int, lifetime: object, what: str) -> int:
    """The lifetime as an int; it must be a HAL lifetime, and SUBGRAPH type and lifetime go together."""
    lt = as_int(lifetime, f"{what} lifetime")
    if lt not in _LIFETIMES:
        raise invalid(f"{what} has lifetime {lt}, which is not an operand lifetime", "V6.lifetime_unknown")
    if (t == OperandType.SUBGRAPH) != (lt == _LT.SUBGRAPH):
        raise invalid(
            f"{what} is {type_name(t)} with lifetime {_LT(lt).name}; SUBGRAPH type and lifetime go together",
            "V6.subgraph_lifetime",
        )
    return lt


def check_operand(operand: object, what: str, ctx: ModelContext) -> int:
    """Every check of one operand on its own; returns the bytes of its constant value (0 if not a constant)."""
    try:
        fields = (operand.type, operand.dimensions, operand.lifetime, operand.location)  # type: ignore[attr-defined]
        quant = (operand.scale, operand.zero_point, operand.extra_params)  # type: ignore[attr-defined]
    except AttributeError:
        raise invalid(f"{what} is not an Operand", "model.malformed") from None
    t = check_type(fields[0], what, ctx.extension_prefixes, ctx.faults)
    dims = check_dimensions(t, fields[1], what, ctx.limits, ctx.faults)
    check_quantization(t, quant[0], quant[1], what, ctx.faults)
    check_extra_params(t, dims, quant[2], what)
    lifetime = check_lifetime(t, fields[2], what)
    return check_location(t, dims, lifetime, fields[3], what, ctx)


# --- the plain operand, accepted without building a single message --------------------------------------------

_POSITIVE, _NON_NEGATIVE, _ZERO = 0, 1, 2  # what the scale of a type must be
_EMPTY, _COPY, _REFERENCE, _SUBGRAPH_REFERENCE = 0, 1, 2, 3  # what the location must be, by lifetime
_TYPE_CLASSES = frozenset({int, OperandType})
_LIFETIME_CLASSES = frozenset({int, OperandLifeTime})


def _location_rules(subgraph: bool) -> dict[int, int]:
    """The location rule of each lifetime a type may have (type and lifetime SUBGRAPH go together), by member."""
    if subgraph:
        return {_LT.SUBGRAPH: _SUBGRAPH_REFERENCE}
    rules = {lt: _EMPTY for lt in _LT if lt != _LT.SUBGRAPH}
    rules[_LT.CONSTANT_COPY] = _COPY
    rules[_LT.CONSTANT_REFERENCE] = _REFERENCE
    return rules


def _plain_rule(t: OperandType) -> tuple[bool, int, int, int, int, bool, dict[int, int]] | None:
    """(no dimensions allowed, scale rule, zero point range, element size, scalar, location rule by lifetime) of a
    type; None for the types whose checks need more than these (OEM, per-channel quantized)."""
    if t in _OEM_TYPES or t == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        return None
    if t in QUANTIZED_TYPES:
        scale = _POSITIVE
    elif t == OperandType.TENSOR_INT32:
        scale = _NON_NEGATIVE
    else:
        scale = _ZERO
    lo, hi = ZERO_POINT_RANGES.get(t, (0, 0))
    subgraph = t == OperandType.SUBGRAPH
    size = 0 if subgraph else element_size(t)
    return is_scalar_type(t) or subgraph, scale, lo, hi, size, is_scalar_type(t), _location_rules(subgraph)


# Keyed by the enum members, as models mostly hold them: a lookup then matches by identity.
_PLAIN_TYPES = {t: rule for t in OperandType if (rule := _plain_rule(t)) is not None}


def plain_operand_bytes(operand: object, ctx: ModelContext) -> int | None:
    """What check_operand returns for an operand that passes every check, or None to leave the decision to it.

    Only the common shape of operand is judged here (a HAL type other than OEM or per-channel, plain ints and a
    float scale, no extra parameters); whatever else, and any operand a check would refuse, gives None, so that
    check_operand finds the same first problem and reports it in the same words. Faults only ever relax a check,
    so they matter to check_operand alone.
    """
    if operand.__class__ is not Operand:
        return None
    t = operand.type  # type: ignore[attr-defined]
    if t.__class__ not in _TYPE_CLASSES:
        return None
    rule = _PLAIN_TYPES.get(t)
    if rule is None:
        return None
    dimensionless, scale_rule, zp_lo, zp_hi, size, scalar, location_rules = rule
    lifetime = operand.lifetime  # type: ignore[attr-defined]
    if lifetime.__class__ not in _LIFETIME_CLASSES:
        return None
    location_rule = location_rules.get(lifetime)
    if location_rule is None:
        return None
    dims = operand.dimensions  # type: ignore[attr-defined]
    if dims.__class__ is not list and dims.__class__ is not tuple:
        return None
    count = 1
    if dims:
        if dimensionless or len(dims) > ctx.max_rank:
            return None
        for d in dims:
            if d.__class__ is not int or d < 0:
                return None
            if d:
                count *= d
        # No known dimension exceeds their product: within the bound, each is a uint32 too.
        if count > ctx.element_bound:
            return None
    s = operand.scale  # type: ignore[attr-defined]
    if s.__class__ is not float:
        return None
    if scale_rule == _ZERO:
        if s != 0.0:
            return None
    elif scale_rule == _POSITIVE:
        if not 0.0 < s < math.inf:
            return None
    elif not 0.0 <= s < math.inf:
        return None
    zp = operand.zero_point  # type: ignore[attr-defined]
    if zp.__class__ is not int or not zp_lo <= zp <= zp_hi or operand.extra_params is not None:  # type: ignore[attr-defined]
        return None
    loc = operand.location  # type: ignore[attr-defined]
    if loc.__class__ is not DataLocation:
        return None
    pool, offset, length = loc.pool_index, loc.offset, loc.length
    if pool.__class__ is not int or offset.__class__ is not int or length.__class__ is not int:
        return None
    if location_rule == _EMPTY:
        return 0 if pool == 0 and offset == 0 and length == 0 else None
    if location_rule == _SUBGRAPH_REFERENCE:
        return 0 if pool == 0 and length == 0 and 0 <= offset < ctx.subgraph_count else None
    if not (0 <= pool <= UINT32_MAX and 0 <= offset <= UINT32_MAX and 0 <= length <= UINT32_MAX):
        return None
    if not scalar and (not dims or 0 in dims):
        return None
    if location_rule == _COPY:
        available = ctx.operand_values_size if pool == 0 else -1
    else:
        available = ctx.pool_sizes[pool] if pool < len(ctx.pool_sizes) else -1
    if available.__class__ is not int or offset + length > available:
        return None
    # With every dimension known, `count` is their product.
    return length if length == size * (1 if scalar else count) else None
