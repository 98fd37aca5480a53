"""Validation of an execution request against the (valid) model it runs on: V30-V37 and D14."""

from __future__ import annotations

import os
from collections.abc import Container, Sequence
from dataclasses import dataclass

from driver_under_test.errors import DriverError, invalid
from driver_under_test.faults import FaultSet, define
from driver_under_test.validation.limits import Limits, check_limit, exhausted
from driver_under_test.validation.operands import (
    UINT32_MAX,
    as_int,
    as_list,
    as_uint32,
    check_dimension_values,
    type_name,
)
from harness.hal import (
    DataLocation,
    DriverBufferToken,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Request,
    RequestArgument,
    element_size,
    is_extension_type,
    is_scalar_type,
    merge_dimensions,
)
from harness.hal.memory import Memory

# Types whose operands have no dimensions at all.
_SCALAR_LIKE = frozenset({OperandType.SUBGRAPH, OperandType.OEM})
_OEM_TYPES = frozenset({OperandType.OEM, OperandType.TENSOR_OEM_BYTE})
_MALFORMED = "request.malformed"

POOL_BOUNDS_OFF_BY_ONE = define(
    "pool_bounds_off_by_one",
    "validation",
    "Bounds-checks a request argument by comparing the index of its last byte (offset + length - 1) with the "
    "pool size instead of size - 1: a location ending exactly one byte past its shared memory (offset + length "
    "== size + 1) is accepted instead of INVALID_ARGUMENT (breaks V31, D14); the execution then fails with "
    "GENERAL_FAILURE when it touches the missing byte.",
).name


@dataclass(slots=True)  # not frozen: a frozen dataclass is several times slower to build, and regions are many
class _Region:
    """A byte range of one memory object that an argument or a constant occupies."""

    start: int
    end: int
    is_output: bool
    label: str


def _is_scalar(t: int) -> bool:
    return is_scalar_type(t) or t in _SCALAR_LIKE


def _sized(t: int) -> bool:
    """Whether the driver knows this type's byte size (not OEM, not an extension)."""
    return t not in _OEM_TYPES and not is_extension_type(t)


def _check_pools(pools: Sequence[object], known_tokens: Container[int]) -> None:
    for k, pool in enumerate(pools):
        if isinstance(pool, DriverBufferToken):
            token = as_int(pool.token, f"request pool {k} token", "V35.unknown_buffer_token")
            if token <= 0 or token not in known_tokens:
                raise invalid(f"request pool {k} names driver buffer token {token}, which this device never gave",
                              "V35.unknown_buffer_token")  # fmt: skip
            continue
        if not isinstance(pool, Memory):
            raise invalid(f"request pool {k} is neither a shared memory nor a driver buffer token", "V35.pool_kind")


def _merge(operand: Operand, arg_dims: Sequence[object], what: str, limits: Limits, *, is_input: bool) -> list[int]:
    """The model's and the request's dimensions combined; V32 when they conflict, V33 for an input's unknown ones.

    Conflicts are judged before size limits: a dimension that contradicts the model is the client's error
    whatever its size.
    """
    if len(arg_dims) > limits.max_rank:
        raise exhausted("max_rank", f"{what} has rank {len(arg_dims)}, above this driver's limit of {limits.max_rank}")
    if all(d.__class__ is int for d in arg_dims):  # the common case: nothing to convert, no message to build
        dims = list(arg_dims)
    else:
        dims = [as_int(d, f"{what} dimension {k}", _MALFORMED) for k, d in enumerate(arg_dims)]
    for k, d in enumerate(dims):
        if not 0 <= d <= UINT32_MAX:
            raise invalid(f"{what} dimension {k} is {d}, outside the uint32 range", "V32.dimensions_conflict")
    model_dims = list(operand.dimensions)
    if dims and _is_scalar(operand.type):
        raise invalid(f"{what} gives dimensions {dims} for a {type_name(operand.type)} scalar",
                      "V32.dimensions_conflict")  # fmt: skip
    merged = merge_dimensions(model_dims, dims)
    if merged is None:
        raise invalid(f"{what} dimensions {dims} conflict with the model's {model_dims}", "V32.dimensions_conflict")
    # Request dimensions, when given, must all be specified for an input (outputs may leave some to the driver).
    if is_input and dims and 0 in dims:
        raise invalid(f"{what} gives unspecified dimensions {dims}", "V33.input_dimensions_unspecified")
    check_dimension_values(merged, what, limits, "V32.dimensions_conflict")
    return merged


def _byte_size(operand: Operand, dims: Sequence[int]) -> int:
    size = element_size(operand.type)
    if _is_scalar(operand.type):
        return size
    for d in dims:
        size *= d
    return size


def _check_argument(
    arg: RequestArgument, operand: Operand, pools: Sequence[object], what: str, is_input: bool, fenced: bool,
    limits: Limits, faults: FaultSet,
) -> list[int]:  # fmt: skip
    """Checks of one argument; returns its merged dimensions."""
    if not isinstance(arg, RequestArgument):
        raise invalid(f"{what} is not a RequestArgument", "request.malformed")
    loc = arg.location
    if not isinstance(loc, DataLocation):
        raise invalid(f"{what} location is not a DataLocation", _MALFORMED)
    arg_dims = arg.dimensions
    if arg_dims.__class__ is not list:
        arg_dims = as_list(arg_dims, f"{what} dimensions", _MALFORMED)
    if arg.has_no_value:
        if any(as_int(v, what, _MALFORMED) for v in (loc.pool_index, loc.offset, loc.length)) or arg_dims:
            raise invalid(f"{what} has no value but carries a location or dimensions", "V36.no_value_with_location")
        return list(operand.dimensions)
    pool_index, offset, length = loc.pool_index, loc.offset, loc.length
    # Plain uint32 ints pass as they are; anything else goes through the checks that name the problem.
    if not (pool_index.__class__ is int and 0 <= pool_index <= UINT32_MAX):
        pool_index = as_uint32(pool_index, f"{what} pool index", "V35.pool_index")
    if pool_index >= len(pools):
        raise invalid(f"{what} uses pool {pool_index} but the request has {len(pools)} pools", "V35.pool_index")
    if not (offset.__class__ is int and 0 <= offset <= UINT32_MAX):
        offset = as_uint32(offset, f"{what} offset", "V31.location_out_of_pool")
    if not (length.__class__ is int and 0 <= length <= UINT32_MAX):
        length = as_uint32(length, f"{what} length", "V31.location_out_of_pool")
    pool = pools[pool_index]
    if isinstance(pool, DriverBufferToken):
        if offset or length:
            raise invalid(f"{what} names a driver buffer with offset {offset} and length {length}; both must be 0",
                          "V31.driver_buffer_location")  # fmt: skip
    elif offset + length > pool.size + (1 if faults.active(POOL_BOUNDS_OFF_BY_ONE) else 0):
        raise invalid(
            f"{what} addresses [{offset}:{offset + length}] of pool {pool_index}, which has {pool.size} bytes",
            "V31.location_out_of_pool",
        )
    merged = _merge(operand, arg_dims, what, limits, is_input=is_input)
    # A driver buffer supplies dimensions of its own; the memory domain checks its arguments against them.
    fully_specified = (
        _is_scalar(operand.type) or (bool(merged) and 0 not in merged) or isinstance(pool, DriverBufferToken)
    )
    if is_input:
        if not fully_specified:
            raise invalid(f"{what} leaves dimensions unspecified: {merged}", "V33.input_dimensions_unspecified")
        if not isinstance(pool, DriverBufferToken) and _sized(operand.type):
            expected = _byte_size(operand, merged)
            if length != expected:
                raise invalid(f"{what} has {length} bytes; a {type_name(operand.type)} of dimensions {merged} has "
                              f"{expected}", "V31.input_length")  # fmt: skip
    elif fenced and not fully_specified:
        raise invalid(f"{what} of a fenced execution has unspecified dimensions {merged}",
                      "V37.fenced_output_unspecified")  # fmt: skip
    return merged


def _memory_key(pool: object) -> tuple:
    """What makes two handles the same memory: the file behind the descriptor (a duplicated fd, a burst slot's
    copy or a second pool entry of one file all name the same file), else the handle object itself."""
    try:
        st = os.fstat(pool.fd)  # type: ignore[attr-defined]
    except (OSError, AttributeError, TypeError, ValueError):
        return ("object", id(pool))
    return ("file", st.st_dev, st.st_ino)


def _base(pool: object) -> int:
    """Where a handle's pool starts in its file, so regions of different handles compare in file coordinates."""
    offset = getattr(pool, "offset", 0)
    return offset if isinstance(offset, int) and offset >= 0 else 0


def _constant_regions(model: Model, keys: set[tuple]) -> dict[tuple, list[_Region]]:
    """CONSTANT_REFERENCE regions (in file coordinates) of the model that live in one of the memories `keys`."""
    regions: dict[tuple, list[_Region]] = {}
    pool_keys = [_memory_key(p) for p in model.pools]
    if not any(key in keys for key in pool_keys):
        return regions
    for k, sg in enumerate([model.main, *model.referenced]):
        for i, operand in enumerate(sg.operands):
            if operand.lifetime != OperandLifeTime.CONSTANT_REFERENCE:
                continue
            loc = operand.location
            key = pool_keys[loc.pool_index]
            if key in keys and loc.length:
                start = _base(model.pools[loc.pool_index]) + loc.offset
                label = f"constant operand {i} of subgraph {k}"
                regions.setdefault(key, []).append(_Region(start, start + loc.length, False, label))
    return regions


def _check_overlaps(model: Model, request: Request, pools: Sequence[object]) -> None:
    """V34/D14: an output overlaps no other output, no input and no constant in the same memory."""
    token_users: dict[int, list[tuple[bool, str]]] = {}
    regions: dict[tuple, list[_Region]] = {}
    keys: dict[int, tuple] = {}  # pool index -> _memory_key, looked up once per pool
    for is_output, args in ((False, request.inputs), (True, request.outputs)):
        for position, arg in enumerate(args):
            if arg.has_no_value:
                continue
            label = f"{'output' if is_output else 'input'} {position}"
            pool = pools[arg.location.pool_index]
            if isinstance(pool, DriverBufferToken):
                token_users.setdefault(pool.token, []).append((is_output, label))
            elif arg.location.length:
                start = _base(pool) + arg.location.offset
                region = _Region(start, start + arg.location.length, is_output, label)
                key = keys.get(arg.location.pool_index)
                if key is None:
                    key = keys[arg.location.pool_index] = _memory_key(pool)
                regions.setdefault(key, []).append(region)
    for token, users in token_users.items():
        outputs = [label for is_output, label in users if is_output]
        if outputs and len(users) > 1:
            raise invalid(f"driver buffer {token} is used by {', '.join(label for _, label in users)} while "
                          f"written as {outputs[0]}", "V34.driver_buffer_aliasing")  # fmt: skip
    output_memories = {key for key, rs in regions.items() if any(r.is_output for r in rs)}
    for key, constant_regions in _constant_regions(model, output_memories).items():
        regions[key].extend(constant_regions)
    for key in output_memories:
        # Sorted by start, a region overlaps an earlier one iff it starts before the furthest end seen so far.
        furthest_any: _Region | None = None
        furthest_output: _Region | None = None
        for r in sorted(regions[key], key=lambda r: (r.start, r.end)):
            other = furthest_any if r.is_output else furthest_output
            if other is not None and r.start < other.end:
                raise invalid(f"{r.label} [{r.start}:{r.end}] overlaps {other.label} [{other.start}:{other.end}]",
                              "V34.outputs_overlap")  # fmt: skip
            if furthest_any is None or r.end > furthest_any.end:
                furthest_any = r
            if r.is_output and (furthest_output is None or r.end > furthest_output.end):
                furthest_output = r


def _validate_request(
    model: Model, request: Request, fenced: bool, limits: Limits, known_tokens: Container[int], faults: FaultSet
) -> list[list[int]]:
    if not isinstance(request, Request):
        raise invalid("not a Request", "request.malformed")
    inputs = as_list(request.inputs, "request.inputs", _MALFORMED)
    outputs = as_list(request.outputs, "request.outputs", _MALFORMED)
    pools = as_list(request.pools, "request.pools", _MALFORMED)
    check_limit(limits, "max_request_args", len(inputs), "the number of request inputs")
    check_limit(limits, "max_request_args", len(outputs), "the number of request outputs")
    check_limit(limits, "max_request_args", len(pools), "the number of request pools")
    main = model.main
    for side, args, indexes in (("inputs", inputs, main.input_indexes), ("outputs", outputs, main.output_indexes)):
        if len(args) != len(indexes):
            raise invalid(f"the request has {len(args)} {side}; the model has {len(indexes)}", "V30.argument_count")
    _check_pools(pools, known_tokens)
    input_dims = [
        _check_argument(arg, main.operands[i], pools, f"input {k}", True, fenced, limits, faults)
        for k, (arg, i) in enumerate(zip(inputs, main.input_indexes))
    ]
    for k, (arg, i) in enumerate(zip(outputs, main.output_indexes)):
        _check_argument(arg, main.operands[i], pools, f"output {k}", False, fenced, limits, faults)
    _check_overlaps(model, request, pools)
    return input_dims


def validate_request(
    model: Model,
    request: Request,
    *,
    fenced: bool = False,
    limits: Limits,
    known_tokens: Container[int] = (),
    faults: FaultSet | None = None,
) -> list[list[int]]:
    """Raise DriverError for an invalid request; return each input's dimensions (model and request merged).

    `model` must already be valid. `fenced` adds V37 (outputs fully specified). `known_tokens` are the
    driver-buffer tokens this device handed out; `faults` the device's planted faults (none by default).
    """
    try:
        return _validate_request(
            model, request, fenced, limits, known_tokens, faults if faults is not None else FaultSet()
        )
    except DriverError:
        raise
    except (AttributeError, TypeError, ValueError, IndexError, KeyError, OverflowError) as e:
        raise invalid(f"malformed request: {e!r}", "request.malformed") from e

