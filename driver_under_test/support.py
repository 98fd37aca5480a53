"""Which operations of a (valid) model this device can run: kernel, operand types, constant memories."""

from __future__ import annotations

from driver_under_test.errors import DriverError
from driver_under_test.kernels import lookup
from driver_under_test.options import DeviceOptions
from driver_under_test.pools import map_pool
from harness.hal import Model, OperandLifeTime, OperandType, Operation, OperationType, Subgraph

_CONTROL_FLOW = (OperationType.IF, OperationType.WHILE)


def unusable_pools(model: Model, options: DeviceOptions) -> set[int]:
    """Indexes of model pools the device cannot map for constants."""
    bad = set()
    for index, pool in enumerate(model.pools):
        try:
            map_pool(pool, options.constant_memory_kinds, writable=False).close()
        except DriverError:
            bad.add(index)
    return bad


def supported_operations(model: Model, options: DeviceOptions) -> list[bool]:
    """One flag per operation of main."""
    bad_pools = unusable_pools(model, options)
    return [_supported(model, model.main, op, options, bad_pools, depth=0) for op in model.main.operations]


def _supported(
    model: Model, sg: Subgraph, op: Operation, options: DeviceOptions, bad_pools: set[int], depth: int
) -> bool:
    entry = lookup(op.type)
    if entry is None or not op.inputs:
        return False
    operands = [sg.operands[i] for i in (*op.inputs, *op.outputs)]
    for operand in operands:
        if operand.lifetime == OperandLifeTime.NO_VALUE or operand.type == OperandType.SUBGRAPH:
            continue
        if int(operand.type) not in options.operand_types:
            return False
        if operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE and operand.location.pool_index in bad_pools:
            return False
    if int(sg.operands[op.inputs[0]].type) not in entry.types:
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
