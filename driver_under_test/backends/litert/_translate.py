"""translate() and unsupported_reason(): a validated HAL model to one TFLite flatbuffer, or why not.

Every HAL subgraph becomes a TFLite subgraph (main is subgraph 0; referenced subgraphs follow in the order the
control-flow rules first need them). Each HAL operand a rule touches becomes one tensor: constants carry their
bytes in a buffer, unknown dimensions are -1 in the shape signature, omitted optional inputs are index -1.
Scalar parameters do not become tensors; rules read them as constants and write builtin options.

A model input may be an optional operand that an execution gives no value: the graph cannot leave a tensor out
at run time, so such an execution runs another translation of the model, with those inputs omitted (`absent`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from driver_under_test.backends._operation import subgraph_of
from driver_under_test.backends.litert import rules as _rules  # noqa: F401  (registers every rule)
from driver_under_test.backends.litert._engine import schema
from driver_under_test.backends.litert._graph import (
    ConstantReader,
    ModelBuilder,
    Op,
    SubgraphBuilder,
    UnsupportedModel,
)
from driver_under_test.backends.litert._registry import RULES, TABLE
from harness.hal import Model, OperandLifeTime, OperationType


def unsupported_reason(model: Model, subgraph: int, operation: int, constants: ConstantReader) -> str | None:
    """Why this operation cannot be translated (None: it can). For IF/WHILE this covers every operation of the
    referenced subgraphs, recursively."""
    graph = subgraph_of(model, subgraph)
    return TABLE.reason(Op(model, subgraph, graph, graph.operations[operation], constants))


def translate(model: Model, constants: ConstantReader, absent: Collection[int] = ()) -> bytes:
    """The TFLite flatbuffer of a validated model whose operations are all supported (UnsupportedModel else).

    `absent` lists positions of main's inputs that an execution gives no value: they are translated as omitted
    operands, and the flatbuffer's inputs are main's other inputs, in order.
    """
    if absent:
        model = _without_inputs(model, absent)
    # Main's operations only: an IF's or WHILE's reason covers the subgraphs it references, and only subgraphs
    # reachable from main are translated.
    for index in range(len(model.main.operations)):
        reason = unsupported_reason(model, 0, index, constants)
        if reason is not None:
            raise UnsupportedModel(f"operation {index} of main: {reason}")
    translation = Translation(model, constants)
    translation.subgraph(0)
    return translation.builder.pack()


def _without_inputs(model: Model, positions: Collection[int]) -> Model:
    """The model with the main inputs at `positions` turned into omitted operands (NO_VALUE, no longer inputs)."""
    main = model.main
    gone = {main.input_indexes[p] for p in positions}
    operands = [replace(o, lifetime=OperandLifeTime.NO_VALUE) if k in gone else o for k, o in enumerate(main.operands)]
    inputs = [k for k in main.input_indexes if k not in gone]
    return replace(model, main=replace(main, operands=operands, input_indexes=inputs))


class Translation:
    """One model being translated: its ModelBuilder and which HAL subgraph became which TFLite subgraph."""

    def __init__(self, model: Model, constants: ConstantReader) -> None:
        self.model = model
        self.constants = constants
        self.builder = ModelBuilder(schema(), model, constants)
        self._done: dict[tuple[int, int], int] = {}

    def subgraph(self, hal_subgraph: int, pass_through: int = 0) -> int:
        """The TFLite subgraph index of HAL subgraph `hal_subgraph` (0 = main, k + 1 = referenced k), built once.

        `pass_through` > 0 appends that many of the subgraph's last inputs to its outputs unchanged (a WHILE
        body in TFLite must return every loop variable; the HAL's input-only operands are not returned).
        """
        key = (hal_subgraph, pass_through)
        found = self._done.get(key)
        if found is not None:
            return found
        index = self.builder.reserve()
        self._done[key] = index
        graph = subgraph_of(self.model, hal_subgraph)
        sub = SubgraphBuilder(self.builder, hal_subgraph, graph)
        sub.translation = self  # control-flow rules reach the other subgraphs through it
        inputs = [sub.hal_tensor(i) for i in graph.input_indexes]
        for operation in graph.operations:
            op = Op(self.model, hal_subgraph, graph, operation, self.constants, sub)
            found = RULES[OperationType(operation.type)]
            op.wide = found.widens(op)
            found.emit(op)
            op.finish()
        outputs = [sub.hal_tensor(i) for i in graph.output_indexes]
        if pass_through:
            outputs += inputs[len(inputs) - pass_through :]
        name = "main" if hal_subgraph == 0 else f"referenced{hal_subgraph - 1}"
        if pass_through:
            name += f"_pass{pass_through}"
        self.builder.subgraphs[index] = sub.finish(inputs, outputs, name)
        return index
