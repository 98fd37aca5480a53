"""Constant operands' values, copied out of operandValues and the model's pools.

A prepared model never reads the client's pools after preparation: compilation copies every constant once
(`read_constants`), so later changes to a pool cannot affect it. Support queries, which come before any
preparation, read only the constants a backend asks for (`ConstantsOnDemand`), opening each pool once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from driver_under_test.errors import failure
from driver_under_test.pools import PoolFile, PoolMapping, open_pool
from harness.hal import Model, Operand, OperandLifeTime, numpy_dtype

_CONSTANT_COPY = int(OperandLifeTime.CONSTANT_COPY)
_CONSTANT_LIFETIMES = frozenset({_CONSTANT_COPY, int(OperandLifeTime.CONSTANT_REFERENCE)})


def constant_value(model: Model, operand: Operand, pools: Sequence[PoolFile | PoolMapping | None]) -> np.ndarray:
    """A read-only copy of a constant operand's value (pool k of a CONSTANT_REFERENCE must be open in `pools[k]`).

    Read-only: every execution of a prepared model, and its cache, share the value; a kernel that wrote into it
    would change the model.
    """
    loc = operand.location
    dtype = numpy_dtype(operand.type)
    if operand.lifetime == _CONSTANT_COPY:
        raw = model.operand_values[loc.offset : loc.offset + loc.length]
    else:
        pool = pools[loc.pool_index]
        assert pool is not None, "the pool of a constant is open"
        raw = pool.read(loc.offset, loc.length)
    value = np.frombuffer(raw, dtype).reshape(tuple(operand.dimensions)).copy()
    value.flags.writeable = False
    return value


def read_constants(model: Model, pools: Sequence[PoolFile | PoolMapping]) -> dict[tuple[int, int], np.ndarray]:
    """Every constant of every subgraph (0 = main, k + 1 = referenced k), copied out of the open pools."""
    values: dict[tuple[int, int], np.ndarray] = {}
    for s, subgraph in enumerate((model.main, *model.referenced)):
        for index, operand in enumerate(subgraph.operands):
            if operand.lifetime in _CONSTANT_LIFETIMES:
                values[(s, index)] = constant_value(model, operand, pools)
    return values


class ConstantsOnDemand:
    """The constants of a model read when first asked for (a ConstantReader), each pool opened once; close() after.

    Only pools the device can map for constants are opened: a constant in another one is a DriverError.
    """

    def __init__(self, model: Model, allowed_kinds: tuple[str, ...]) -> None:
        self.model = model
        self.allowed_kinds = allowed_kinds
        self._pools: dict[int, PoolFile | PoolMapping] = {}
        self._values: dict[tuple[int, int], np.ndarray] = {}

    def __call__(self, subgraph: int, operand: int) -> np.ndarray:
        key = (subgraph, operand)
        value = self._values.get(key)
        if value is None:
            model = self.model
            op = (model.main, *model.referenced)[subgraph].operands[operand]
            if op.lifetime not in _CONSTANT_LIFETIMES:
                raise failure(f"operand {operand} of subgraph {subgraph} is not a constant")
            pools: list[PoolFile | PoolMapping | None] = [None] * len(model.pools)
            if op.lifetime != _CONSTANT_COPY:
                k = op.location.pool_index
                if k not in self._pools:
                    self._pools[k] = open_pool(model.pools[k], self.allowed_kinds, writable=False)
                pools[k] = self._pools[k]
            value = self._values[key] = constant_value(model, op, pools)
        return value

    def close(self) -> None:
        """Close the pools opened so far."""
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()
