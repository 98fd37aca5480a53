"""The recipe registry: the recipe of each operation type (registered by the `recipe` decorator), `generic` for
the operations without one, the operations whose quantized outputs are fitted to their results (FREE_QUANT) and
the output quantization the HAL fixes (FIXED_OUTPUT_QUANT, read by OpDraw).
"""

from __future__ import annotations

from collections.abc import Callable

from harness.gen.model._operation import FIXED_OUTPUT_QUANT, OpDraw
from harness.hal import OperandType, OperationType
from harness.ops.fixed_quantization import FIXED_QUANTIZATION

Recipe = Callable[[OpDraw], None]

RECIPES: dict[int, Recipe] = {}
# Operations whose quantized outputs may take any parameters: they are fitted to the actual results.
FREE_QUANT: set[int] = set()
T = OperandType
O = OperationType


def recipe(*ops: int, free_quant: bool = False) -> Callable[[Recipe], Recipe]:
    """Register a recipe for these operation types."""

    def register(fn: Recipe) -> Recipe:
        for op in ops:
            if int(op) in RECIPES:
                raise RuntimeError(f"two recipes for {OperationType(op).name}")
            RECIPES[int(op)] = fn
            if free_quant:
                FREE_QUANT.add(int(op))
        return fn

    return register


def generic(d: OpDraw) -> None:
    """Input 0 is a data tensor; every other data tensor has its shape; parameters follow the hints."""
    if d.args and not d.is_set(0) and d.positions[0] not in d.table:
        d.data(0)


# The output quantization the HAL fixes, as OpDraw reads it.
FIXED_OUTPUT_QUANT.update(
    {
        (op, position, t): q
        for (op, side, position), table in FIXED_QUANTIZATION.items()
        if side == "output"
        for t, q in table.items()
    }
)


def recipe_for(op: int) -> Recipe:
    """The recipe of an operation type (generic when none is registered)."""
    return RECIPES.get(int(op), generic)
