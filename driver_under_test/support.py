"""Which operations of a (valid) model this device can run: its backend, operand types, constant memories.

The device's own conditions (operand types it computes on, pools it can map) are checked here; whether the
backend runs an operation is the backend's answer, asked for every operation of main and, for IF and WHILE, of
every subgraph they reference.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain
from operator import attrgetter

from driver_under_test.backends import Backend, ConstantReader
from driver_under_test.errors import DriverError
from driver_under_test.options import DeviceOptions
from driver_under_test.pools import check_pool
from harness.hal import Model, Operand, OperandLifeTime, OperandType, OperationType, Subgraph

# Plain ints: reading an enum member off its class costs more than the comparison it is used in.
_CONTROL_FLOW = (int(OperationType.IF), int(OperationType.WHILE))
_NO_VALUE = int(OperandLifeTime.NO_VALUE)
_CONSTANT_REFERENCE = int(OperandLifeTime.CONSTANT_REFERENCE)
_SUBGRAPH_LIFETIME = int(OperandLifeTime.SUBGRAPH)
_SUBGRAPH = int(OperandType.SUBGRAPH)
_TYPE_CLASSES = frozenset({int, OperandType})
_type_of = attrgetter("type")


def unusable_pools(model: Model, options: DeviceOptions) -> set[int]:
    """Indexes of model pools the device cannot map for constants."""
    bad = set()
    for index, pool in enumerate(model.pools):
        try:
            check_pool(pool, options.constant_memory_kinds, writable=False)
        except DriverError:
            bad.add(index)
    return bad


def supported_operations(
    model: Model,
    options: DeviceOptions,
    backend: Backend,
    constants: ConstantReader,
    bad_pools: set[int] | None = None,
) -> list[bool]:
    """One flag per operation of main; `bad_pools` are the unusable_pools when the caller has mapped them already."""
    if bad_pools is None:
        bad_pools = unusable_pools(model, options)
    main = model.main
    ask = _Asker(model, options, backend, constants, bad_pools)
    usable = _all_usable(main, options, bad_pools)
    return [ask.supported(0, main, k, 0, usable) for k in range(len(main.operations))]


def _all_usable(sg: Subgraph, options: DeviceOptions, bad_pools: set[int]) -> bool:
    """True when no operand of `sg` can make an operation unsupported, so that no operation need look at its own.

    That is: every pool is usable and every operand type is one the device computes on (or SUBGRAPH). A False
    only means that each operation checks the operands it uses.
    """
    if bad_pools:
        return False
    types = list(map(_type_of, sg.operands))
    if not _TYPE_CLASSES.issuperset(map(type, types)):
        return False
    supported = options.operand_types
    return supported.issuperset(types) or supported.issuperset([t for t in types if t != _SUBGRAPH])


def _as_type(t: object) -> int:
    # Types were validated as integers; ints and OperandType members hash as themselves, anything else converts.
    return t if t.__class__ is int or t.__class__ is OperandType else int(t)  # type: ignore[return-value,call-overload]


def _operands_usable(
    operands: list[Operand], indexes: Iterable[int], types: frozenset[int], bad_pools: set[int]
) -> bool:
    for i in indexes:
        operand = operands[i]
        lifetime = operand.lifetime
        t = operand.type
        if lifetime == _NO_VALUE or t == _SUBGRAPH:
            continue
        if _as_type(t) not in types:
            return False
        if lifetime == _CONSTANT_REFERENCE and operand.location.pool_index in bad_pools:
            return False
    return True


class _Asker:
    """One support query: the model, the device's conditions and its backend."""

    def __init__(
        self, model: Model, options: DeviceOptions, backend: Backend, constants: ConstantReader, bad_pools: set[int]
    ) -> None:
        self.model = model
        self.options = options
        self.backend = backend
        self.constants = constants
        self.bad_pools = bad_pools

    def supported(self, s: int, sg: Subgraph, k: int, depth: int, usable: bool) -> bool:
        """Whether the device runs operation k of subgraph s (`sg`); `usable` is _all_usable(sg), which spares
        looking at each of its operands."""
        op = sg.operations[k]
        inputs = op.inputs
        if not inputs:
            return False
        operands = sg.operands
        options = self.options
        types = options.operand_types
        if not usable and not _operands_usable(operands, chain(inputs, op.outputs), types, self.bad_pools):
            return False
        if not self.backend.runs(self.model, s, k, self.constants):
            return False
        if op.type in _CONTROL_FLOW:
            model = self.model
            # Validation has ruled out reference cycles; the depth bound is a second line of defence.
            if depth > len(model.referenced):
                return False
            for i in inputs:
                operand = operands[i]
                if operand.lifetime == _SUBGRAPH_LIFETIME:
                    r = operand.location.offset
                    ref = model.referenced[r]
                    inner_usable = _all_usable(ref, options, self.bad_pools)
                    for inner in range(len(ref.operations)):
                        if not self.supported(r + 1, ref, inner, depth + 1, inner_usable):
                            return False
        return True
