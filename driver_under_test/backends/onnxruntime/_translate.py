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

from driver_under_test.backends.onnxruntime import rules as _rules  # noqa: F401  (registers every rule)
from driver_under_test.backends.onnxruntime._engine import IR_VERSION, OPSET, onnx
from driver_under_test.backends.onnxruntime._graph import (
    ELEMENT_TYPES,
    SCALARS,
    UNMAPPED_TYPES,
    Body,
    ConstantReader,
    GraphBuilder,
    Op,
    UnsupportedModel,
    operand_shape,
)
from driver_under_test.backends.onnxruntime._registry import RULES, UNSUPPORTED
from harness.hal import Model, Operand, OperandLifeTime, OperandType, OperationType, Subgraph

NOT_YET = "no translation rule written yet"


def _graph(model: Model, subgraph: int) -> Subgraph:
    return model.main if subgraph == 0 else model.referenced[subgraph - 1]


def unsupported_reason(model: Model, subgraph: int, operation: int, constants: ConstantReader) -> str | None:
    """Why this operation cannot be translated (None: it can)."""
    graph = _graph(model, subgraph)
    return _reason(Op(model, subgraph, graph, graph.operations[operation], constants))


def _operand_reason(kind: OperationType, what: str, operand_type: int) -> str | None:
    if operand_type in UNMAPPED_TYPES:
        return f"{kind.name}: {what}: {UNMAPPED_TYPES[operand_type]}"
    if operand_type not in ELEMENT_TYPES:
        return f"{kind.name}: {what} has operand type {operand_type}, which has no ONNX element type"
    return None


def _reason(op: Op) -> str | None:
    try:
        kind = OperationType(op.operation.type)
    except ValueError:
        return f"operation type {op.operation.type} is not a HAL operation"
    if kind in UNSUPPORTED:
        return f"{kind.name}: {UNSUPPORTED[kind]}"
    found = RULES.get(kind)
    if found is None:
        return f"{kind.name}: {NOT_YET}"
    for position, index in enumerate(op.operation.inputs):
        operand = op.graph.operands[index]
        if operand.lifetime == OperandLifeTime.NO_VALUE or operand.type == OperandType.SUBGRAPH:
            continue
        reason = _operand_reason(kind, f"input {position}", operand.type)
        if reason is not None:
            return reason
    for position, index in enumerate(op.operation.outputs):
        reason = _operand_reason(kind, f"output {position}", op.graph.operands[index].type)
        if reason is not None:
            return reason
    for position in range(op.n_inputs):
        operand = op.operand(position)
        if operand is None or op.is_const(position):
            continue
        if position in found.params or (operand.type in SCALARS and not found.runtime_scalar(position)):
            return (
                f"{kind.name}: input {position} ({found.role(position)}) is given at run time; the translation "
                "needs it as a constant (it becomes a node attribute or shapes the graph)"
            )
    if found.types is not None and op.has(found.type_input):
        t = op.in_type(found.type_input)
        if t not in found.types:
            name = OperandType(t).name if t in OperandType._value2member_map_ else t
            return f"{kind.name}: the translation does not take operand type {name} (input {found.type_input})"
    if found.check is not None:
        try:
            return found.check(op)
        except UnsupportedModel as exc:
            return str(exc)
    return None


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
