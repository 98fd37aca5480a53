"""Hand-built one-operation models for the LiteRT backend's tests, and checking them against the reference."""

from __future__ import annotations

import numpy as np

from driver_under_test.backends.litert import KernelSet
from harness.hal import (
    DataLocation,
    ErrorStatus,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
    SymmPerChannelQuantParams,
    numpy_dtype,
)
from harness.reference import run_model
from tests.driver.backends.litert.cases import mismatches, run_translated

T = OperandType
L = OperandLifeTime


class Build:
    """A model assembled operand by operand: model inputs, CONSTANT_COPY values, outputs and operations."""

    def __init__(self) -> None:
        self.operands: list[Operand] = []
        self.values = bytearray()
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.operations: list[Operation] = []

    def _add(self, operand: Operand) -> int:
        self.operands.append(operand)
        return len(self.operands) - 1

    def input(self, type_: int, dims, scale: float = 0.0, zero_point: int = 0) -> int:
        """A model input."""
        index = self._add(Operand(type_, list(dims), 0, scale, zero_point, L.SUBGRAPH_INPUT))
        self.inputs.append(index)
        return index

    def const(self, type_: int, value, scale: float = 0.0, zero_point: int = 0, extra=None) -> int:
        """A CONSTANT_COPY operand holding `value` (a scalar for scalar types)."""
        array = np.asarray(value, dtype=numpy_dtype(type_))
        while len(self.values) % 4:
            self.values.append(0)
        offset = len(self.values)
        self.values += array.tobytes()
        dims = [] if type_ in (T.INT32, T.FLOAT32, T.BOOL, T.FLOAT16) else list(array.shape)
        location = DataLocation(0, offset, array.nbytes)
        return self._add(Operand(type_, dims, 0, scale, zero_point, L.CONSTANT_COPY, location, extra))

    def temporary(self, type_: int, dims, scale: float = 0.0, zero_point: int = 0) -> int:
        """An operation's result that is not a model output."""
        return self._add(Operand(type_, list(dims), 0, scale, zero_point, L.TEMPORARY_VARIABLE))

    def absent(self, type_: int) -> int:
        """An omitted optional input (NO_VALUE)."""
        return self._add(Operand(type_, [], 0, 0.0, 0, L.NO_VALUE))

    def i32(self, value: int) -> int:
        """An INT32 constant scalar."""
        return self.const(T.INT32, value)

    def output(self, type_: int, dims, scale: float = 0.0, zero_point: int = 0) -> int:
        """A model output."""
        index = self._add(Operand(type_, list(dims), 0, scale, zero_point, L.SUBGRAPH_OUTPUT))
        self.outputs.append(index)
        return index

    def op(self, type_: OperationType, inputs, outputs) -> None:
        """Append an operation."""
        self.operations.append(Operation(type_, list(inputs), list(outputs)))

    def model(self) -> Model:
        """The model, with every operand's consumer count."""
        for operation in self.operations:
            for index in operation.inputs:
                self.operands[index].number_of_consumers += 1
        main = Subgraph(self.operands, self.operations, self.inputs, self.outputs)
        return Model(main=main, operand_values=bytes(self.values))


def per_channel(scales) -> SymmPerChannelQuantParams:
    """Per-channel parameters along dimension 0."""
    return SymmPerChannelQuantParams(scales=list(scales), channel_dim=0)


def check_against_reference(model: Model, inputs, kernel_sets=tuple(KernelSet)) -> None:
    """Translate the model and run it on each kernel set; every output must match the reference."""
    expected = run_model(model, inputs)
    assert expected.status == ErrorStatus.NONE and not expected.unspecified, expected
    for kernel_set in kernel_sets:
        actual = run_translated(model, inputs, kernel_set)
        assert mismatches(model, inputs, expected.outputs, actual) == [], kernel_set


def builtins_of(flatbuffer: bytes, subgraph: int = 0) -> list[str]:
    """The builtin operator names of one subgraph of a flatbuffer, in order."""
    from ai_edge_litert import schema_py_generated as s

    names = {v: k for k, v in vars(s.BuiltinOperator).items() if not k.startswith("_")}
    model = s.Model.GetRootAs(flatbuffer, 0)
    graph = model.Subgraphs(subgraph)
    codes = [model.OperatorCodes(graph.Operators(k).OpcodeIndex()) for k in range(graph.OperatorsLength())]
    return [names[code.BuiltinCode()] for code in codes]
