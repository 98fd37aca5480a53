"""What the mutations share: cheap structural copies, site selection and the operation catalogue's count ranges.

Copies rebuild the model's own structures (operands, operations, index lists) but share what is immutable or must
not be duplicated: operandValues bytes, pool Memory objects and extension parameter bytes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from harness import ops
from harness.gen.source import GenerationRejected, Source
from harness.hal import (
    DataLocation,
    ExtensionNameAndPrefix,
    Model,
    Operand,
    OperandLifeTime,
    Operation,
    OperationType,
    Request,
    RequestArgument,
    Subgraph,
    SymmPerChannelQuantParams,
)

L = OperandLifeTime
T = TypeVar("T")

UINT32_MAX = 0xFFFFFFFF
CONTROL_FLOW = frozenset({int(OperationType.IF), int(OperationType.WHILE)})
CONSTANT_LIFETIMES = frozenset({int(L.CONSTANT_COPY), int(L.CONSTANT_REFERENCE)})
WRITTEN_LIFETIMES = frozenset({int(L.TEMPORARY_VARIABLE), int(L.SUBGRAPH_OUTPUT)})
# Lifetimes whose location must stay empty.
LOCATIONLESS_LIFETIMES = frozenset(
    {int(L.TEMPORARY_VARIABLE), int(L.SUBGRAPH_INPUT), int(L.SUBGRAPH_OUTPUT), int(L.NO_VALUE)}
)


# ---------------------------------------------------------------------------------------------------------------
# Copies


def copy_operand(o: Operand) -> Operand:
    """A copy of an operand that shares nothing mutable with it."""
    extra = o.extra_params
    if isinstance(extra, SymmPerChannelQuantParams):
        extra = SymmPerChannelQuantParams(list(extra.scales), extra.channel_dim)
    loc = o.location
    return Operand(
        o.type,
        list(o.dimensions),
        o.number_of_consumers,
        o.scale,
        o.zero_point,
        o.lifetime,
        DataLocation(loc.pool_index, loc.offset, loc.length),
        extra,
    )


def copy_subgraph(g: Subgraph) -> Subgraph:
    """A copy of a subgraph that shares nothing mutable with it."""
    return Subgraph(
        [copy_operand(o) for o in g.operands],
        [Operation(op.type, list(op.inputs), list(op.outputs)) for op in g.operations],
        list(g.input_indexes),
        list(g.output_indexes),
    )


def copy_model(model: Model) -> Model:
    """A copy of a model; operandValues and the pools' Memory objects are shared, not copied."""
    return Model(
        main=copy_subgraph(model.main),
        referenced=[copy_subgraph(g) for g in model.referenced],
        operand_values=model.operand_values,
        pools=list(model.pools),
        relax_computation_float32_to_float16=model.relax_computation_float32_to_float16,
        extension_name_to_prefix=[ExtensionNameAndPrefix(e.name, e.prefix) for e in model.extension_name_to_prefix],
    )


def copy_argument(a: RequestArgument) -> RequestArgument:
    """A copy of a request argument."""
    loc = a.location
    return RequestArgument(a.has_no_value, DataLocation(loc.pool_index, loc.offset, loc.length), list(a.dimensions))


def copy_request(request: Request) -> Request:
    """A copy of a request; the pools (Memory objects, driver buffer tokens) are shared."""
    return Request(
        [copy_argument(a) for a in request.inputs],
        [copy_argument(a) for a in request.outputs],
        list(request.pools),
    )


# ---------------------------------------------------------------------------------------------------------------
# Subgraphs and sites


def graphs(model: Model) -> list[Subgraph]:
    """Main (index 0) followed by the referenced subgraphs (index r + 1)."""
    return [model.main, *model.referenced]


def pick(source: Source, candidates: Sequence[T], what: str) -> T:
    """One candidate chosen by the source; GenerationRejected when there is none."""
    if not candidates:
        raise GenerationRejected(f"the subject has no {what}")
    return source.choice(candidates)


@dataclass(frozen=True)
class OperandSite:
    """Operand `index` of subgraph `graph` (0 = main)."""

    graph: int
    index: int


@dataclass(frozen=True)
class OperationSite:
    """Operation `index` of subgraph `graph` (0 = main)."""

    graph: int
    index: int


def operand_sites(model: Model, keep: Callable[[Model, int, int, Operand], bool]) -> list[OperandSite]:
    """Every operand of every subgraph that `keep(model, graph, index, operand)` accepts."""
    return [
        OperandSite(g, k)
        for g, graph in enumerate(graphs(model))
        for k, o in enumerate(graph.operands)
        if keep(model, g, k, o)
    ]


def operation_sites(model: Model, keep: Callable[[Model, int, Operation], bool]) -> list[OperationSite]:
    """Every operation of every subgraph that `keep(model, graph, operation)` accepts."""
    return [
        OperationSite(g, i)
        for g, graph in enumerate(graphs(model))
        for i, op in enumerate(graph.operations)
        if keep(model, g, op)
    ]


def paired_operands(model: Model) -> set[tuple[int, int]]:
    """(graph, operand) pairs whose description must match another operand's through control flow.

    The inputs and outputs of referenced subgraphs must fit the IF/WHILE operations that use them, and those
    operations' own operands must fit the subgraphs: changing the type, scale, zero point, dimensions or extra
    params of either would also break the control-flow rule (V25), so description mutations leave them alone.
    """
    paired = {(r + 1, k) for r, g in enumerate(model.referenced) for k in (*g.input_indexes, *g.output_indexes)}
    for g, graph in enumerate(graphs(model)):
        for op in graph.operations:
            if int(op.type) in CONTROL_FLOW:
                paired.update((g, k) for k in (*op.inputs, *op.outputs))
    return paired


def bump_consumers(graph: Subgraph, indexes: Sequence[int], delta: int) -> None:
    """Add `delta` to numberOfConsumers of every (in-range) operand named in `indexes`, once per occurrence."""
    for k in indexes:
        if 0 <= k < len(graph.operands):
            o = graph.operands[k]
            o.number_of_consumers = max(0, o.number_of_consumers + delta)


def location_is_empty(loc: DataLocation) -> bool:
    """True for the all-zero location of operands that have no stored value."""
    return (loc.pool_index, loc.offset, loc.length) == (0, 0, 0)


# ---------------------------------------------------------------------------------------------------------------
# The operation catalogue


def catalogued(op: Operation) -> ops.OpSpec | None:
    """The catalogue spec of an operation the HAL defines a signature for (not IF/WHILE/OEM), else None."""
    return _catalogued(int(op.type))


@functools.cache
def _catalogued(op_type: int) -> ops.OpSpec | None:
    if op_type in CONTROL_FLOW or op_type == OperationType.OEM_OPERATION:
        return None
    spec = ops.get(op_type)
    return spec if spec is not None and spec.signatures else None


@dataclass(frozen=True)
class CountRange:
    """The fewest and most operands any signature of an operation takes (math.inf: unbounded)."""

    lo: int
    hi: float


def input_counts(spec: ops.OpSpec) -> CountRange:
    """How many inputs the operation's signatures accept, over all of them."""
    return _counts(int(spec.op))[0]


def output_counts(spec: ops.OpSpec) -> CountRange:
    """How many outputs the operation's signatures accept, over all of them."""
    return _counts(int(spec.op))[1]


@functools.cache
def _counts(op_type: int) -> tuple[CountRange, CountRange]:
    signatures = ops.get(op_type).signatures
    return (
        CountRange(
            min(s.required_inputs for s in signatures),
            max(math.inf if any(a.repeated for a in s.inputs) else len(s.inputs) for s in signatures),
        ),
        CountRange(
            min(len(s.outputs) for s in signatures),
            max(math.inf if any(a.repeated for a in s.outputs) else len(s.outputs) for s in signatures),
        ),
    )


def accepted_types(spec: ops.OpSpec, position: int, count: int, *, is_input: bool) -> frozenset[int]:
    """Every operand type any signature could accept at `position` of an operation with `count` operands.

    A superset: positions at or after a repeated Arg may land on any Arg from there on.
    """
    return _accepted_types(int(spec.op), position, count, is_input)


@functools.lru_cache(maxsize=4096)
def _accepted_types(op_type: int, position: int, count: int, is_input: bool) -> frozenset[int]:
    found: set[int] = set()
    for s in ops.get(op_type).signatures:
        args = s.inputs if is_input else s.outputs
        required = s.required_inputs if is_input else len(s.outputs)
        repeated = [i for i, a in enumerate(args) if a.repeated]
        if count < required or (not repeated and count > len(args)):
            continue
        if repeated and position >= repeated[0]:
            for a in args[repeated[0] :]:
                found.update(int(t) for t in a.types)
        elif position < len(args):
            found.update(int(t) for t in args[position].types)
    return frozenset(found)
