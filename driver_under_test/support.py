"""Which operations of a (valid) model this device can run: kernel, operand types, constant memories."""

from __future__ import annotations

from driver_under_test.errors import DriverError
from driver_under_test.kernels import lookup
from driver_under_test.options import DeviceOptions
from driver_under_test.pools import map_pool
from harness.hal import Model, OperandLifeTime, OperandType, Operation, OperationType, Subgraph

_CONTROL_FLOW = (OperationType.IF, OperationType.WHILE)
_NO_VALUE = int(OperandLifeTime.NO_VALUE)
_CONSTANT_REFERENCE = int(OperandLifeTime.CONSTANT_REFERENCE)
_SUBGRAPH = int(OperandType.SUBGRAPH)


def unusable_pools(model: Model, options: DeviceOptions) -> set[int]:
    """Indexes of model pools the device cannot map for constants."""
    bad = set()
    for index, pool in enumerate(model.pools):
        try:
            map_pool(pool, options.constant_memory_kinds, writable=False).close()
        except DriverError:
            bad.add(index)
    return bad


def supported_operations(model: Model, options: DeviceOptions, bad_pools: set[int] | None = None) -> list[bool]:
    """One flag per operation of main; `bad_pools` are the unusable_pools when the caller has mapped them already."""
    if bad_pools is None:
        bad_pools = unusable_pools(model, options)
    return [_supported(model, model.main, op, options, bad_pools, depth=0) for op in model.main.operations]


def _as_type(t: object) -> int:
    # Types were validated as integers; ints and OperandType members hash as themselves, anything else converts.
    return t if t.__class__ is int or t.__class__ is OperandType else int(t)  # type: ignore[return-value,call-overload]


def _supported(
    model: Model, sg: Subgraph, op: Operation, options: DeviceOptions, bad_pools: set[int], depth: int
) -> bool:
    entry = lookup(op.type)
    if entry is None or not op.inputs:
        return False
    operands = sg.operands
    types = options.operand_types
    for operand in [operands[i] for i in (*op.inputs, *op.outputs)]:
        lifetime = operand.lifetime
        if lifetime == _NO_VALUE or operand.type == _SUBGRAPH:
            continue
        if _as_type(operand.type) not in types:
            return False
        if lifetime == _CONSTANT_REFERENCE and operand.location.pool_index in bad_pools:
            return False
    if _as_type(operands[op.inputs[0]].type) not in entry.types:
        return False
    if op.type in _CONTROL_FLOW:
        # Validation has ruled out reference cycles; the depth bound is a second line of defence.
        if depth > len(model.referenced):
            return False
        for i in op.inputs:
            operand = sg.operands[i]
            if operand.lifetime == OperandLifeTime.SUBGRAPH:
                ref = model.referenced[operand.location.offset]
                if not all(_supported(model, ref, inner, options, bad_pools, depth + 1) for inner in ref.operations):
                    return False
    return True
