"""One HAL operation as the rules of a translating backend (LiteRT, ONNX Runtime) read it.

A backend that translates HAL models into an engine's format has one rule per HAL operation; each rule, in its
support check and in its translation, sees the operation through a `HalOperation`: its input and output operands,
the values of constant inputs and its scalar parameters. Each backend's `Op` extends it with the writing side (the
engine's tensors and operators). Reading needs no engine, so support checks work without the engine installed.

A widened operation (`wide`, set for rules whose engine kernels lack float16) shows its TENSOR_FLOAT16 and FLOAT16
operands as float32 ones through `in_type`; the backend's writing side computes them in float32. Every float16
value is exact in float32, and a float32 result rounded once to float16 is within the HAL's float16 tolerance.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from driver_under_test.backends import ConstantReader
from harness.hal import Model, Operand, OperandLifeTime, OperandType, Operation, OperationType, Subgraph

T = OperandType
L = OperandLifeTime

QUANTIZED = frozenset(
    {
        T.TENSOR_QUANT8_ASYMM,
        T.TENSOR_QUANT8_ASYMM_SIGNED,
        T.TENSOR_QUANT8_SYMM,
        T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
        T.TENSOR_QUANT16_SYMM,
        T.TENSOR_QUANT16_ASYMM,
    }
)
SCALARS = frozenset({T.FLOAT32, T.INT32, T.UINT32, T.BOOL, T.FLOAT16})
# Operand types a widened operation shows as float32.
WIDENED = {T.TENSOR_FLOAT16: T.TENSOR_FLOAT32, T.FLOAT16: T.FLOAT32}
_CONSTANT = (L.CONSTANT_COPY, L.CONSTANT_REFERENCE)
_MISSING = object()


def subgraph_of(model: Model, number: int) -> Subgraph:
    """HAL subgraph `number` of the model: 0 is main, k + 1 is referenced subgraph k."""
    return model.main if number == 0 else model.referenced[number - 1]


class UnsupportedModel(Exception):
    """The model has an operation (or operand) this backend cannot translate; the message says why."""


class HalOperation:
    """One HAL operation of one subgraph of a model, with the reader of the model's constants."""

    def __init__(
        self, model: Model, subgraph: int, graph: Subgraph, operation: Operation, constants: ConstantReader
    ) -> None:
        self.model = model
        self.subgraph = subgraph  # 0 = main, k + 1 = referenced subgraph k
        self.graph = graph
        self.operation = operation
        self.constants = constants
        self.wide = False  # float16 operands computed in float32 (set from the rule)
        self._values: dict[int, np.ndarray] = {}
        self._scalars: dict[int, Any] = {}  # support checks and rules read the same parameters several times

    @property
    def type(self) -> OperationType:
        """The HAL operation type."""
        return OperationType(self.operation.type)

    @property
    def name(self) -> str:
        """The HAL operation's name, for messages."""
        return self.type.name

    @property
    def n_inputs(self) -> int:
        """How many inputs the operation lists (omitted trailing optional inputs are not listed)."""
        return len(self.operation.inputs)

    def operand(self, i: int) -> Operand | None:
        """Input i's operand, or None when it is not listed or has no value (NO_VALUE)."""
        if i >= len(self.operation.inputs):
            return None
        operand = self.graph.operands[self.operation.inputs[i]]
        return None if operand.lifetime == L.NO_VALUE else operand

    def referenced(self, i: int) -> int:
        """The HAL subgraph number (k + 1 for referenced k) of SUBGRAPH input i."""
        operand = self.operand(i)
        if operand is None or operand.type != T.SUBGRAPH:
            raise ValueError(f"{self.name}: input {i} is not a SUBGRAPH operand")
        return int(operand.location.offset) + 1

    def out(self, k: int = 0) -> Operand:
        """Output k's operand."""
        return self.graph.operands[self.operation.outputs[k]]

    def has(self, i: int) -> bool:
        """True when input i is present with a value."""
        return self.operand(i) is not None

    def in_type(self, i: int = 0) -> int:
        """The operand type of input i (which must be present); TENSOR_FLOAT32 for a float16 one when widened."""
        operand = self.operand(i)
        assert operand is not None, f"{self.name}: input {i} absent"
        return WIDENED.get(operand.type, operand.type) if self.wide else operand.type

    def has_half(self) -> bool:
        """True when some input or output is a TENSOR_FLOAT16 tensor."""
        operands = self.graph.operands
        return any(operands[i].type == T.TENSOR_FLOAT16 for i in (*self.operation.inputs, *self.operation.outputs))

    def is_const(self, i: int) -> bool:
        """True when input i is a constant (CONSTANT_COPY or CONSTANT_REFERENCE)."""
        operand = self.operand(i)
        return operand is not None and operand.lifetime in _CONSTANT

    def value(self, i: int) -> np.ndarray:
        """The value of constant input i, in its storage dtype and dimensions."""
        if i not in self._values:
            if not self.is_const(i):
                raise UnsupportedModel(f"{self.name}: input {i} is not a constant")
            self._values[i] = np.asarray(self.constants(self.subgraph, self.operation.inputs[i]))
        return self._values[i]

    def scalar(self, i: int, default: Any = None) -> Any:
        """The Python value of constant scalar input i, or `default` when the input is absent."""
        found = self._scalars.get(i, _MISSING)
        if found is _MISSING:
            if not self.has(i):
                return default
            found = self._scalars[i] = self.value(i).reshape(-1)[0].item()
        return found

    def dims(self, i: int) -> list[int]:
        """Input i's declared dimensions (0 = unknown, [] = unknown rank for a tensor)."""
        operand = self.operand(i)
        assert operand is not None
        return list(operand.dimensions)

    def rank(self, i: int) -> int | None:
        """Input i's rank, or None when unknown."""
        operand = self.operand(i)
        if operand is None or (operand.type not in SCALARS and not operand.dimensions):
            return None
        return len(operand.dimensions)

    def out_rank(self, k: int = 0) -> int | None:
        """Output k's rank, or None when unknown."""
        dims = self.out(k).dimensions
        return len(dims) if dims else None


FUSED_ACTIVATIONS = ("NONE", "RELU", "RELU1", "RELU6")  # the HAL's fused activation codes 0..3


def activation(op: HalOperation, i: int) -> int:
    """The fused activation code (0..3) of constant input i; UnsupportedModel for any other value."""
    code = int(op.scalar(i, 0))
    if not 0 <= code < len(FUSED_ACTIVATIONS):
        raise UnsupportedModel(f"{op.name}: fused activation code {code} is not one of NONE, RELU, RELU1, RELU6")
    return code


def check_activation(op: HalOperation, i: int) -> str | None:
    """Support check of a fused activation input (constant, 0..3)."""
    try:
        activation(op, i)
    except UnsupportedModel as exc:
        return str(exc)
    return None


def check_arithmetic_activation(op: HalOperation) -> str | None:
    """Support check of ADD/SUB/MUL/DIV's fused activation (input 2): 0..3, and NONE for TENSOR_INT32."""
    reason = check_activation(op, 2)
    if reason is None and op.in_type(0) == T.TENSOR_INT32 and activation(op, 2) != 0:
        return f"{op.name}: TENSOR_INT32 with a fused activation (the HAL allows only NONE)"
    return reason
