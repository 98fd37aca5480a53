"""The recipe registry: the recipe of each operation type (registered by the `recipe` decorator), `generic` for
the operations without one, the operations whose quantized outputs are fitted to their results (FREE_QUANT) and
the output quantization the HAL fixes (FIXED_OUTPUT_QUANT, read by OpDraw).
"""

from __future__ import annotations

from collections.abc import Callable

from harness.gen.model._operation import FIXED_OUTPUT_QUANT, OpDraw
from harness.hal import OperandType, OperationType

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


def fixed_quant(op: int, out: int, table: dict[int, tuple[float, int]]) -> None:
    """Record HAL-fixed output quantization per output type."""
    for t, q in table.items():
        FIXED_OUTPUT_QUANT[(int(op), out, int(t))] = q


_SIGMOID = {T.TENSOR_QUANT8_ASYMM: (1.0 / 256, 0), T.TENSOR_QUANT8_ASYMM_SIGNED: (1.0 / 256, -128)}
_TANH = {T.TENSOR_QUANT8_ASYMM: (1.0 / 128, 128), T.TENSOR_QUANT8_ASYMM_SIGNED: (1.0 / 128, 0)}
fixed_quant(O.LOGISTIC, 0, _SIGMOID)
fixed_quant(O.SOFTMAX, 0, _SIGMOID)
fixed_quant(O.TANH, 0, _TANH)
fixed_quant(O.L2_NORMALIZATION, 0, _TANH)
fixed_quant(O.HASHTABLE_LOOKUP, 1, {T.TENSOR_QUANT8_ASYMM: (1.0, 0)})
fixed_quant(O.QUANTIZED_16BIT_LSTM, 0, {T.TENSOR_QUANT16_SYMM: (2.0**-11, 0)})
fixed_quant(O.QUANTIZED_16BIT_LSTM, 1, {T.TENSOR_QUANT8_ASYMM: (1.0 / 128, 128)})


def recipe_for(op: int) -> Recipe:
    """The recipe of an operation type (generic when none is registered)."""
    return RECIPES.get(int(op), generic)
