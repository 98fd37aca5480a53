"""translate() and unsupported_reason(): a validated HAL model to one ONNX model, or why not.

Main becomes the ONNX graph; each HAL operand a rule touches is one named tensor (constants are initializers in
their storage type; model inputs and outputs keep their HAL types, with unknown dimensions left symbolic). Scalar
parameters do not become tensors unless a rule feeds them at run time; rules read them as constants and write
node attributes. Referenced subgraphs become nested ONNX graphs (If branches, Loop bodies) or are inlined, as
the control flow rules decide; an operation in one is supported when its rule can take it there.

A model input may be an optional operand that an execution gives no value: an ONNX graph cannot leave an input
out at run time, so such an execution runs another translation of the model, with those inputs omitted (`absent`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import Any

from driver_under_test.backends._operation import subgraph_of
from driver_under_test.backends.onnxruntime import rules as _rules  # noqa: F401  (registers every rule)
from driver_under_test.backends.onnxruntime._engine import IR_VERSION, OPSET, onnx
from driver_under_test.backends.onnxruntime._graph import (
    ELEMENT_TYPES,
    Body,
    ConstantReader,
    GraphBuilder,
    Op,
    UnsupportedModel,
    operand_shape,
)
from driver_under_test.backends.onnxruntime._registry import RULES, TABLE
from harness.hal import Model, Operand, OperandLifeTime, OperationType, Subgraph


def unsupported_reason(model: Model, subgraph: int, operation: int, constants: ConstantReader) -> str | None:
    """Why this operation cannot be translated (None: it can)."""
    graph = subgraph_of(model, subgraph)
    return TABLE.reason(Op(model, subgraph, graph, graph.operations[operation], constants))


def translate(model: Model, constants: ConstantReader, absent: Collection[int] = ()) -> bytes:
    """The serialized ONNX model of a validated model whose operations are all supported (UnsupportedModel else).

    `absent` lists positions of main's inputs that an execution gives no value: they are translated as omitted
    operands, and the ONNX model's inputs are main's other inputs, in order.
    """
    if absent:
        model = _without_inputs(model, absent)
    main = model.main
    for index in range(len(main.operations)):
        reason = unsupported_reason(model, 0, index, constants)
        if reason is not None:
            raise UnsupportedModel(f"operation {index} of main: {reason}")
    builder = GraphBuilder(main, constants)
    inputs = [builder.hal_tensor(i) for i in main.input_indexes]
    emit_operations(model, builder)
    outputs = []
    for position, index in enumerate(main.output_indexes):
        name = builder.hal_tensor(index)
        if name in outputs or name in inputs or name in builder.initializers:
            # An ONNX graph output must be produced by a node, and named once.
            copy = f"output{position}"
            builder.nodes.append(("Identity", [name], [copy], {}))
            name = copy
        outputs.append(name)
    return _pack(builder, main, inputs, outputs)


def emit_operations(model: Model, builder: GraphBuilder) -> None:
    """Write the nodes of every operation of the builder's HAL subgraph, in order."""
    for operation in builder.graph.operations:
        op = Op(model, builder.subgraph, builder.graph, operation, builder.constants, builder)
        RULES[OperationType(operation.type)].emit(op)
        op.finish()


def _without_inputs(model: Model, positions: Collection[int]) -> Model:
    """The model with the main inputs at `positions` turned into omitted operands (NO_VALUE, no longer inputs)."""
    main = model.main
    gone = {main.input_indexes[p] for p in positions}
    operands = [replace(o, lifetime=OperandLifeTime.NO_VALUE) if k in gone else o for k, o in enumerate(main.operands)]
    inputs = [k for k in main.input_indexes if k not in gone]
    return replace(model, main=replace(main, operands=operands, input_indexes=inputs))


def _pack(builder: GraphBuilder, main: Subgraph, inputs: list[str], outputs: list[str]) -> bytes:
    o = onnx()
    helper, proto = o.helper, o.TensorProto

    def value_info(name: str, index: int) -> Any:
        operand = main.operands[index]
        shape = operand_shape(operand)
        dims = None if shape is None else [d if d is not None else f"{name}_d{k}" for k, d in enumerate(shape)]
        return helper.make_tensor_value_info(name, getattr(proto, ELEMENT_TYPES[operand.type]), dims)

    def open_value_info(name: str, kind: Operand | str) -> Any:
        element = kind if isinstance(kind, str) else ELEMENT_TYPES[kind.type]
        return helper.make_tensor_value_info(name, getattr(proto, element), [] if isinstance(kind, str) else None)

    def attribute(key: str, value: Any) -> Any:
        # "to" (Cast) names an element type; a Body is a nested graph; the rest are plain attribute values.
        if key == "to" and isinstance(value, str):
            return getattr(proto, value)
        if isinstance(value, Body):
            return helper.make_graph(
                make_nodes(value.builder),
                value.builder.fresh("body"),
                [open_value_info(name, kind) for name, kind in value.inputs],
                [open_value_info(name, kind) for name, kind in value.outputs],
            )
        return value

    def make_nodes(built: GraphBuilder) -> list[Any]:
        return [
            helper.make_node(
                op_type, ins, outs, name=built.fresh(f"n_{op_type}"), **{a: attribute(a, v) for a, v in at.items()}
            )
            for op_type, ins, outs, at in built.nodes
        ]

    nodes = make_nodes(builder)
    initializers = [o.numpy_helper.from_array(array, name) for name, array in builder.initializers.items()]
    graph = helper.make_graph(
        nodes,
        "nnfuzz_hal_model",
        [value_info(name, index) for name, index in zip(inputs, main.input_indexes)],
        [value_info(name, index) for name, index in zip(outputs, main.output_indexes)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="nnfuzz")
    model.ir_version = IR_VERSION
    return model.SerializeToString(deterministic=True)
