"""Request mutations (V30-V36) and fenced-request mutations (V37), against a valid model and a request valid for it.

Pools are shared with the original request, except where the mutation is about a pool's size: then a new, smaller
memory of the same kind replaces it in the mutated request (the caller owns it; it is closed when collected).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.gen.mutations._common import UINT32_MAX, copy_argument, copy_request, location_is_empty, pick
from harness.gen.mutations._registry import mutation
from harness.gen.source import Source
from harness.hal import (
    DataLocation,
    DriverBufferToken,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Request,
    RequestArgument,
    has_unknown_dimensions,
    is_tensor_type,
)
from harness.hal.memory import Memory, MemoryKind, create_ashmem, create_hardware_buffer_blob, create_mmap_fd

_SHRINKERS: dict[MemoryKind, Callable[[Memory, int], Memory]] = {
    MemoryKind.ASHMEM: lambda _old, size: create_ashmem(size),
    MemoryKind.MMAP_FD: lambda old, size: create_mmap_fd(size, offset=old.offset),
    MemoryKind.HARDWARE_BUFFER_BLOB: lambda _old, size: create_hardware_buffer_blob(size),
}


@dataclass(frozen=True)
class _Arg:
    """One request argument: which side, its position, the argument and the model operand it stands for."""

    is_output: bool
    position: int
    arg: RequestArgument
    operand: Operand

    def of(self, request: Request) -> RequestArgument:
        """The same argument in (a copy of) the request."""
        return (request.outputs if self.is_output else request.inputs)[self.position]


def _arguments(model: Model, request: Request, keep: Callable[[_Arg, Request], bool]) -> list[_Arg]:
    main = model.main
    found = []
    for is_output, args, indexes in (
        (False, request.inputs, main.input_indexes),
        (True, request.outputs, main.output_indexes),
    ):
        for position, (arg, k) in enumerate(zip(args, indexes)):
            a = _Arg(is_output, position, arg, main.operands[k])
            if keep(a, request):
                found.append(a)
    return found


def _in_memory(a: _Arg, request: Request) -> bool:
    """The argument has a value in a shared-memory pool of the request."""
    p = a.arg.location.pool_index
    return not a.arg.has_no_value and 0 <= p < len(request.pools) and isinstance(request.pools[p], Memory)


def _in_driver_buffer(a: _Arg, request: Request) -> bool:
    p = a.arg.location.pool_index
    return not a.arg.has_no_value and 0 <= p < len(request.pools) and isinstance(request.pools[p], DriverBufferToken)


def _tensor(o: Operand) -> bool:
    return is_tensor_type(o.type) and int(o.type) != OperandType.TENSOR_OEM_BYTE


def _mutate_argument(
    model: Model,
    request: Request,
    source: Source,
    keep: Callable[[_Arg, Request], bool],
    change: Callable[[RequestArgument, _Arg, Request, Source], None],
    what: str,
) -> Request:
    site = pick(source, _arguments(model, request, keep), what)
    mutated = copy_request(request)
    change(site.of(mutated), site, mutated, source)
    return mutated


# ---------------------------------------------------------------------------------------------------------------
# V30 argument removed or added (at the end, so that every other argument still meets its own operand)


@mutation("argument_removed", "V30", "request", "the last input or the last output argument is removed")
def _argument_removed(_model: Model, request: Request, source: Source) -> Request:
    side = pick(
        source, [s for s, args in (("inputs", request.inputs), ("outputs", request.outputs)) if args], "argument"
    )
    mutated = copy_request(request)
    getattr(mutated, side).pop()
    return mutated


@mutation("argument_added", "V30", "request", "an input or output argument is appended")
def _argument_added(_model: Model, request: Request, source: Source) -> Request:
    side = source.choice(["inputs", "outputs"])
    mutated = copy_request(request)
    args = getattr(mutated, side)
    args.append(copy_argument(source.choice(args)) if args and source.boolean() else RequestArgument(has_no_value=True))
    return mutated


# ---------------------------------------------------------------------------------------------------------------
# V31 location outside the pool


def _pool_size(request: Request, arg: RequestArgument) -> int:
    return int(request.pools[arg.location.pool_index].size)


@mutation("argument_outside_pool", "V31", "request", "an argument's offset puts its bytes past the end of its pool")
def _argument_outside_pool(model: Model, request: Request, source: Source) -> Request:
    def change(arg: RequestArgument, _a: _Arg, r: Request, s: Source) -> None:
        size, length = _pool_size(r, arg), arg.location.length
        arg.location.offset = max(
            0,
            s.choice(
                [size - length + 1, size - length + s.integer(1, 4096), size + 1, UINT32_MAX - s.integer(0, length)]
            ),
        )

    return _mutate_argument(model, request, source, _in_memory, change, "argument in shared memory")


@mutation("output_length_beyond_pool", "V31", "request", "an output's length runs past the end of its pool")
def _output_length_beyond_pool(model: Model, request: Request, source: Source) -> Request:
    def change(arg: RequestArgument, _a: _Arg, r: Request, s: Source) -> None:
        arg.location.length = _pool_size(r, arg) - arg.location.offset + s.choice([1, s.integer(2, 4096), UINT32_MAX])

    return _mutate_argument(
        model, request, source, lambda a, r: a.is_output and _in_memory(a, r), change, "output in shared memory"
    )


@mutation(
    "pool_shrunk",
    "V31",
    "request",
    "a pool is replaced by a new, smaller memory of the same kind, too small for the arguments in it",
)
def _pool_shrunk(model: Model, request: Request, source: Source) -> Request:
    ends: dict[int, int] = {}
    for a in _arguments(model, request, _in_memory):
        loc = a.arg.location
        ends[loc.pool_index] = max(ends.get(loc.pool_index, 0), loc.offset + loc.length)
    options = [p for p, end in ends.items() if end > 0 and request.pools[p].kind in _SHRINKERS]
    p = pick(source, sorted(options), "pool with bytes in use")
    old = request.pools[p]
    mutated = copy_request(request)
    mutated.pools[p] = _SHRINKERS[old.kind](old, source.integer(0, ends[p] - 1))
    return mutated


@mutation(
    "driver_buffer_argument_with_location",
    "V31",
    "request",
    "an argument in a driver-managed buffer has a non-zero offset or length",
)
def _driver_buffer_location(model: Model, request: Request, source: Source) -> Request:
    def change(arg: RequestArgument, _a: _Arg, _r: Request, s: Source) -> None:
        if s.boolean():
            arg.location.offset = s.integer(1, 4096)
        else:
            arg.location.length = s.integer(1, 4096)

    return _mutate_argument(model, request, source, _in_driver_buffer, change, "argument in a driver buffer")


# ---------------------------------------------------------------------------------------------------------------
# V32 dimensions that conflict with the model


def _base_dimensions(a: _Arg) -> list[int]:
    """The request's dimensions if it gives them, else the model's; unknown (0) entries become 1."""
    dims = a.arg.dimensions if a.arg.dimensions else a.operand.dimensions
    return [d or 1 for d in dims]


@mutation(
    "argument_dimension_conflict",
    "V32",
    "request",
    "an argument's dimensions differ from a dimension the model fixes",
)
def _dimension_conflict(model: Model, request: Request, source: Source) -> Request:
    def keep(a: _Arg, _r: Request) -> bool:
        return not a.arg.has_no_value and _tensor(a.operand) and any(a.operand.dimensions)

    def change(arg: RequestArgument, a: _Arg, _r: Request, s: Source) -> None:
        dims = _base_dimensions(a)
        known = [p for p, d in enumerate(a.operand.dimensions) if d]
        p = s.choice(known)
        d = a.operand.dimensions[p]
        dims[p] = s.choice([d + 1, d + s.integer(2, 1000), UINT32_MAX, *([d - 1] if d > 1 else [])])
        arg.dimensions = dims

    return _mutate_argument(model, request, source, keep, change, "argument with a known model dimension")


@mutation("argument_rank_conflict", "V32", "request", "an argument's rank differs from the model operand's rank")
def _rank_conflict(model: Model, request: Request, source: Source) -> Request:
    def keep(a: _Arg, _r: Request) -> bool:
        return not a.arg.has_no_value and _tensor(a.operand) and bool(a.operand.dimensions)

    def change(arg: RequestArgument, a: _Arg, _r: Request, s: Source) -> None:
        dims = _base_dimensions(a)
        if len(dims) > 1 and s.boolean():
            del dims[s.integer(0, len(dims) - 1)]
        else:
            for _ in range(s.integer(1, 2)):
                dims.insert(s.integer(0, len(dims)), 1)
        arg.dimensions = dims

    return _mutate_argument(model, request, source, keep, change, "argument of known rank")


# ---------------------------------------------------------------------------------------------------------------
# V33 unknown dimensions on an input


@mutation("input_dimension_zero", "V33", "request", "an input's request dimensions contain a 0 (unspecified)")
def _input_dimension_zero(model: Model, request: Request, source: Source) -> Request:
    def keep(a: _Arg, _r: Request) -> bool:
        return (
            not a.is_output
            and not a.arg.has_no_value
            and _tensor(a.operand)
            and bool(a.arg.dimensions or a.operand.dimensions)
        )

    def change(arg: RequestArgument, a: _Arg, _r: Request, s: Source) -> None:
        dims = _base_dimensions(a)
        dims[s.integer(0, len(dims) - 1)] = 0
        arg.dimensions = dims

    return _mutate_argument(model, request, source, keep, change, "tensor input")


@mutation(
    "input_dimensions_left_unknown",
    "V33",
    "request",
    "an input whose model dimensions are not fully known gets no request dimensions to complete them",
)
def _input_dimensions_unknown(model: Model, request: Request, source: Source) -> Request:
    def keep(a: _Arg, _r: Request) -> bool:
        return (
            not a.is_output
            and not a.arg.has_no_value
            and _tensor(a.operand)
            and has_unknown_dimensions(a.operand.dimensions)
        )

    def change(arg: RequestArgument, a: _Arg, _r: Request, s: Source) -> None:
        arg.dimensions = list(a.operand.dimensions) if a.operand.dimensions and s.boolean() else []

    return _mutate_argument(model, request, source, keep, change, "input with unknown model dimensions")


# ---------------------------------------------------------------------------------------------------------------
# V34 overlapping outputs


@dataclass(frozen=True)
class _Placement:
    """Move argument `moved` (side, position) into pool `pool` at an offset in [lo, hi]."""

    moved: tuple[bool, int]
    pool: int
    lo: int
    hi: int


def _overlapping_placement(mover: _Arg, fixed: _Arg, request: Request) -> _Placement | None:
    """Where `mover` can go so that it overlaps `fixed` and stays inside `fixed`'s pool (None: nowhere)."""
    loc, length = fixed.arg.location, mover.arg.location.length
    if length <= 0 or loc.length <= 0:
        return None
    size = int(request.pools[loc.pool_index].size)
    lo, hi = max(0, loc.offset - length + 1), min(loc.offset + loc.length - 1, size - length)
    return _Placement((mover.is_output, mover.position), loc.pool_index, lo, hi) if lo <= hi else None


def _overlap(model: Model, request: Request, source: Source, with_output: bool) -> Request:
    args = _arguments(model, request, _in_memory)
    outputs = [a for a in args if a.is_output]
    others = [a for a in args if a.is_output == with_output]
    placements = []
    for out in outputs:
        for other in others:
            if other is out:
                continue
            # Either the output moves onto the other argument, or the other argument onto the output.
            for mover, fixed in ((out, other), (other, out)):
                placement = _overlapping_placement(mover, fixed, request)
                if placement is not None:
                    placements.append(placement)
    placement = pick(source, placements, "pair of arguments that can share bytes")
    mutated = copy_request(request)
    is_output, position = placement.moved
    arg = (mutated.outputs if is_output else mutated.inputs)[position]
    arg.location = DataLocation(placement.pool, source.integer(placement.lo, placement.hi), arg.location.length)
    return mutated


@mutation("output_overlaps_output", "V34", "request", "two outputs share bytes of one pool")
def _output_overlaps_output(model: Model, request: Request, source: Source) -> Request:
    return _overlap(model, request, source, with_output=True)


@mutation("output_overlaps_input", "V34", "request", "an output shares bytes of one pool with an input")
def _output_overlaps_input(model: Model, request: Request, source: Source) -> Request:
    return _overlap(model, request, source, with_output=False)


@mutation(
    "output_overlaps_constant",
    "V34",
    "request",
    "an output is placed over a CONSTANT_REFERENCE value of the model, in the model's own pool",
)
def _output_overlaps_constant(model: Model, request: Request, source: Source) -> Request:
    constants = [
        o.location
        for graph in (model.main, *model.referenced)
        for o in graph.operands
        if int(o.lifetime) == OperandLifeTime.CONSTANT_REFERENCE
        and 0 <= o.location.pool_index < len(model.pools)
        and o.location.length > 0
    ]
    outputs = [a for a in _arguments(model, request, _in_memory) if a.is_output and a.arg.location.length > 0]
    options = []
    for out in outputs:
        length = out.arg.location.length
        for loc in constants:
            size = int(model.pools[loc.pool_index].size)
            lo, hi = max(0, loc.offset - length + 1), min(loc.offset + loc.length - 1, size - length)
            if lo <= hi:
                options.append((out.position, loc.pool_index, lo, hi))
    position, model_pool, lo, hi = pick(source, options, "output that fits in a pool holding a constant")
    mutated = copy_request(request)
    memory = model.pools[model_pool]
    # Overlap is by memory identity: the request must name the model's very pool object.
    index = next((i for i, p in enumerate(mutated.pools) if p is memory), None)
    if index is None:
        mutated.pools.append(memory)
        index = len(mutated.pools) - 1
    arg = mutated.outputs[position]
    arg.location = DataLocation(index, source.integer(lo, hi), arg.location.length)
    return mutated


# ---------------------------------------------------------------------------------------------------------------
# V35 pool index out of range


@mutation("argument_pool_index_out_of_range", "V35", "request", "an argument names a pool the request does not have")
def _pool_index_out_of_range(model: Model, request: Request, source: Source) -> Request:
    def change(arg: RequestArgument, _a: _Arg, r: Request, s: Source) -> None:
        n = len(r.pools)
        # -1: unsigned in the HAL, but a driver that indexes a list with it silently gets the last pool.
        arg.location.pool_index = s.choice([n, n + s.integer(1, 100), UINT32_MAX, -1])

    return _mutate_argument(
        model, request, source, lambda a, _r: not a.arg.has_no_value, change, "argument with a value"
    )


# ---------------------------------------------------------------------------------------------------------------
# V36 hasNoValue with a location or dimensions


@mutation("no_value_with_location", "V36", "request", "an argument with a location is marked hasNoValue")
def _no_value_with_location(model: Model, request: Request, source: Source) -> Request:
    def change(arg: RequestArgument, _a: _Arg, _r: Request, s: Source) -> None:
        arg.has_no_value = True
        if s.boolean():
            arg.dimensions = []

    return _mutate_argument(
        model,
        request,
        source,
        lambda a, _r: not a.arg.has_no_value and not location_is_empty(a.arg.location),
        change,
        "argument with a location",
    )


@mutation("no_value_with_dimensions", "V36", "request", "an argument marked hasNoValue carries dimensions")
def _no_value_with_dimensions(model: Model, request: Request, source: Source) -> Request:
    def change(arg: RequestArgument, a: _Arg, _r: Request, s: Source) -> None:
        arg.has_no_value = True
        arg.location = DataLocation()
        arg.dimensions = _base_dimensions(a) or [s.integer(1, 4)]

    return _mutate_argument(model, request, source, lambda *_: True, change, "argument")


# ---------------------------------------------------------------------------------------------------------------
# V37 fenced execution with unspecified outputs


@mutation(
    "fenced_output_unspecified",
    "V37",
    "fenced_request",
    "an output whose model dimensions are not fully known is left unspecified (or zero-sized) by the request",
)
def _fenced_output_unspecified(model: Model, request: Request, source: Source) -> Request:
    def keep(a: _Arg, _r: Request) -> bool:
        return (
            a.is_output
            and not a.arg.has_no_value
            and _tensor(a.operand)
            and has_unknown_dimensions(a.operand.dimensions)
        )

    def change(arg: RequestArgument, a: _Arg, _r: Request, s: Source) -> None:
        model_dims = a.operand.dimensions
        unknown = [p for p, d in enumerate(model_dims) if d == 0]
        form = s.integer(0, 2) if unknown and arg.dimensions else 0
        if form == 0:
            arg.dimensions = []
        elif form == 1:
            arg.dimensions = list(model_dims)
        else:
            dims = list(arg.dimensions) if len(arg.dimensions) == len(model_dims) else [d or 1 for d in model_dims]
            dims[s.choice(unknown)] = 0
            arg.dimensions = dims

    return _mutate_argument(model, request, source, keep, change, "output with unknown model dimensions")
