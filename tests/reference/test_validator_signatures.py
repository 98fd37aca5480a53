"""Signature conformance against a hand-written catalogue: counts, repeated and optional positions, NO_VALUE,
constant-only inputs, rank limits, the ShapeContext a check sees, and which mismatch is reported."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from harness.hal import (
    DataLocation,
    ExtensionNameAndPrefix,
    Model,
    Operand,
    Operation,
    Subgraph,
    numpy_dtype,
)
from harness.hal import OperandLifeTime as L
from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.hal.memory import create_ashmem
from harness.ops import Arg, OpSpec, ShapeContext, Signature
from harness.reference import Violation, uncatalogued_operations, validate_model

F32, I32, Q8 = T.TENSOR_FLOAT32, T.INT32, T.TENSOR_QUANT8_ASYMM
OP = Op.CONCATENATION  # any operation type: the catalogue below decides what it accepts


def catalogue(*signatures: Signature, op: int = OP):
    """A catalogue that knows one operation with these signatures."""
    spec = OpSpec(op=Op(op), family="test", signatures=list(signatures))
    return lambda t: spec if t == op else None


class Graph:
    """Builds a one-operation main subgraph; constants go to operandValues."""

    def __init__(self) -> None:
        self.operands: list[Operand] = []
        self.values = bytearray()
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def add(self, t: int, dims: Sequence[int] = (), lifetime: int = L.SUBGRAPH_INPUT, **kw) -> int:
        q = {"scale": 0.5} if t == Q8 else {}
        self.operands.append(Operand(type=t, dimensions=list(dims), lifetime=lifetime, **q, **kw))
        return len(self.operands) - 1

    def inp(self, t: int, dims: Sequence[int] = (2,), lifetime: int = L.SUBGRAPH_INPUT) -> Graph:
        self.inputs.append(self.add(t, dims, lifetime))
        return self

    def const(self, t: int, dims: Sequence[int], values: Sequence) -> Graph:
        data = np.asarray(values, dtype=numpy_dtype(t)).tobytes()
        self.values.extend(bytes(-len(self.values) % 4))
        location = DataLocation(0, len(self.values), len(data))
        self.values.extend(data)
        self.inputs.append(self.add(t, dims, L.CONSTANT_COPY, location=location))
        return self

    def out(self, t: int, dims: Sequence[int] = (2,)) -> Graph:
        self.outputs.append(self.add(t, dims, L.SUBGRAPH_OUTPUT))
        return self

    def model(self, op: int = OP) -> Model:
        for k, o in enumerate(self.operands):
            o.number_of_consumers = self.inputs.count(k)
        io_in = [k for k, o in enumerate(self.operands) if o.lifetime == L.SUBGRAPH_INPUT]
        main = Subgraph(self.operands, [Operation(op, list(self.inputs), list(self.outputs))], io_in, self.outputs)
        return Model(main=main, operand_values=bytes(self.values))


def only(found: list[Violation]) -> Violation:
    assert len(found) == 1, found
    return found[0]


UNARY = Signature(inputs=(Arg("x", (F32,)),), outputs=(Arg("y", (F32,)),))
CONCAT = Signature(inputs=(Arg("values", (F32,), repeated=True), Arg("axis", (I32,))), outputs=(Arg("y", (F32,)),))
OPTIONAL_TAIL = Signature(
    inputs=(Arg("x", (F32,)), Arg("flag", (I32,), optional=True), Arg("more", (I32,), optional=True)),
    outputs=(Arg("y", (F32,)),),
    min_inputs=1,
)


@pytest.mark.parametrize("tensors", [1, 2, 3])
def test_a_repeated_position_absorbs_one_or_more_inputs(tensors: int) -> None:
    g = Graph()
    for _ in range(tensors):
        g.inp(F32)
    model = g.const(I32, (), [0]).out(F32).model()
    assert validate_model(model, catalogue=catalogue(CONCAT)) == []


def test_a_repeated_position_needs_at_least_one_input() -> None:
    model = Graph().const(I32, (), [0]).out(F32).model()
    v = only(validate_model(model, catalogue=catalogue(CONCAT)))
    assert (v.rule, v.v) == ("model.operation.signature", "V17")
    assert "takes at least 2 inputs, got 1" in v.message


@pytest.mark.parametrize("extra", [0, 1, 2])
def test_trailing_optional_inputs_may_be_omitted(extra: int) -> None:
    g = Graph().inp(F32)
    for _ in range(extra):
        g.const(I32, (), [1])
    assert validate_model(g.out(F32).model(), catalogue=catalogue(OPTIONAL_TAIL)) == []


def test_inputs_beyond_the_optional_ones_are_extra_inputs() -> None:
    model = Graph().inp(F32).const(I32, (), [1]).const(I32, (), [1]).const(I32, (), [1]).out(F32).model()
    v = only(validate_model(model, catalogue=catalogue(OPTIONAL_TAIL)))
    assert (v.rule, v.v) == ("model.operation.signature", "V19")
    assert "takes 1 to 3 inputs, got 4" in v.message


def test_no_value_is_accepted_at_an_optional_position_only() -> None:
    accepted = Graph().inp(F32).inp(I32, (), L.NO_VALUE).out(F32).model()
    assert validate_model(accepted, catalogue=catalogue(OPTIONAL_TAIL)) == []
    refused = Graph().inp(F32, (2,), L.NO_VALUE).out(F32).model()
    v = only(validate_model(refused, catalogue=catalogue(OPTIONAL_TAIL)))
    assert (v.rule, v.v) == ("model.operation.signature", "V10")
    assert "omitted (NO_VALUE)" in v.message


def test_no_value_inputs_keep_their_type_checked() -> None:
    # The HAL checks the declared type of an omitted optional operand like any other.
    model = Graph().inp(F32).inp(T.FLOAT32, (), L.NO_VALUE).out(F32).model()
    v = only(validate_model(model, catalogue=catalogue(OPTIONAL_TAIL)))
    assert v.rule == "model.operation.signature" and "type FLOAT32 not accepted for flag" in v.message


@pytest.mark.parametrize(
    ("lifetime", "accepted"), [(L.CONSTANT_COPY, True), (L.CONSTANT_REFERENCE, True), (L.SUBGRAPH_INPUT, False)]
)
def test_constant_only_positions_refuse_values_known_only_at_run_time(lifetime: int, accepted: bool) -> None:
    signature = Signature(inputs=(Arg("x", (F32,)), Arg("k", (I32,), constant=True)), outputs=(Arg("y", (F32,)),))
    g = Graph().inp(F32)
    if lifetime == L.CONSTANT_COPY:
        g.const(I32, (), [3])
    elif lifetime == L.CONSTANT_REFERENCE:
        g.inputs.append(g.add(I32, (), L.CONSTANT_REFERENCE, location=DataLocation(0, 0, 4)))
    else:
        g.inp(I32, ())
    model = g.out(F32).model()
    model.pools = [create_ashmem(4)]
    found = validate_model(model, catalogue=catalogue(signature))
    if accepted:
        assert found == []
    else:
        v = only(found)
        assert v.rule == "model.operation.signature" and "k must be a constant" in v.message


@pytest.mark.parametrize(("dims", "accepted"), [((2,), True), ((2, 2), True), ((2, 2, 2), False), ((), True)])
def test_rank_limits_apply_to_tensors_of_known_rank(dims: tuple[int, ...], accepted: bool) -> None:
    signature = Signature(inputs=(Arg("x", (F32,), rank=(1, 2)),), outputs=(Arg("y", (F32,)),))
    found = validate_model(Graph().inp(F32, dims).out(F32).model(), catalogue=catalogue(signature))
    assert (found == []) == accepted, found
    if not accepted:
        assert "rank 3 outside [1, 2]" in only(found).message


def test_output_counts_are_fewer_or_extra_outputs() -> None:
    fewer = Graph().inp(F32).model()
    fewer.main.operands[0].number_of_consumers = 1
    assert only(validate_model(fewer, catalogue=catalogue(UNARY))).v == "V18"
    more = Graph().inp(F32).out(F32).out(F32).model()
    assert only(validate_model(more, catalogue=catalogue(UNARY))).v == "V20"


def test_output_types_are_checked() -> None:
    v = only(validate_model(Graph().inp(F32).out(Q8).model(), catalogue=catalogue(UNARY)))
    assert (v.rule, v.v) == ("model.operation.signature", "V10")
    assert "output 0 (operand 1): type TENSOR_QUANT8_ASYMM not accepted" in v.message


def test_the_closest_signature_is_named_a_type_mismatch_before_a_count_mismatch() -> None:
    float_pair = Signature(inputs=(Arg("a", (F32,)), Arg("b", (F32,))), outputs=(Arg("y", (F32,)),))
    quant_triple = Signature(inputs=(Arg("a", (Q8,)), Arg("b", (Q8,)), Arg("c", (I32,))), outputs=(Arg("y", (Q8,)),))
    model = Graph().inp(F32).inp(Q8).out(F32).model()
    v = only(validate_model(model, catalogue=catalogue(quant_triple, float_pair)))
    assert v.v == "V10"
    assert "closest (a:TENSOR_FLOAT32, b:TENSOR_FLOAT32)" in v.message
    assert "input 1 (operand 1): type TENSOR_QUANT8_ASYMM not accepted for b" in v.message


def test_a_check_sees_the_operands_shapes_and_constant_values() -> None:
    seen: list[ShapeContext] = []

    def check(ctx: ShapeContext) -> list[str]:
        seen.append(ctx)
        return []

    signature = Signature(
        inputs=(
            Arg("x", (F32,)),
            Arg("axes", (T.TENSOR_INT32,)),
            Arg("k", (I32,)),
            Arg("skip", (I32,), optional=True),
        ),
        outputs=(Arg("y", (F32,)),),
        check=check,
    )
    model = (
        (Graph().inp(F32, ()).const(T.TENSOR_INT32, (2,), [3, -4]).const(I32, (), [7]).inp(I32, (), L.NO_VALUE))
        .out(F32, (0, 2))
        .model()
    )
    assert validate_model(model, catalogue=catalogue(signature)) == []
    (ctx,) = seen
    assert [o is None for o in ctx.operands] == [False, False, False, True]
    assert list(ctx.shapes) == [None, (2,), (), None]  # x has unknown rank
    assert ctx.values[0] is None and ctx.values[3] is None
    assert ctx.values[1].tolist() == [3, -4]
    assert ctx.scalar(2) == 7
    assert [list(o.dimensions) for o in ctx.outputs] == [[0, 2]]


def test_a_failing_check_is_a_constraint_violation() -> None:
    signature = Signature(inputs=(Arg("x", (F32,)),), outputs=(Arg("y", (F32,)),), check=lambda ctx: ["y must match x"])
    v = only(validate_model(Graph().inp(F32).out(F32).model(), catalogue=catalogue(signature)))
    assert (v.rule, v.v) == ("model.operation.constraint", "V10")
    assert "y must match x" in v.message


def test_any_accepting_signature_is_enough() -> None:
    failing = Signature(inputs=(Arg("x", (F32,)),), outputs=(Arg("y", (F32,)),), check=lambda ctx: ["no"])
    assert validate_model(Graph().inp(F32).out(F32).model(), catalogue=catalogue(failing, UNARY)) == []


def test_uncatalogued_operations_are_left_unchecked_and_listed() -> None:
    model = Graph().inp(F32).inp(F32).out(Q8).model()
    assert validate_model(model, catalogue=lambda t: None) == []
    assert uncatalogued_operations(model, catalogue=lambda t: None) == {OP}
    assert uncatalogued_operations(model, catalogue=catalogue(UNARY)) == set()


def test_oem_and_declared_extension_operations_need_no_signature() -> None:
    for op in (Op.OEM_OPERATION, (7 << 16) | 3):
        model = Graph().inp(F32).out(Q8).model(op=op)
        model.extension_name_to_prefix = [ExtensionNameAndPrefix("com.example.ext", 7)]
        assert validate_model(model, catalogue=lambda t: None) == []
        assert uncatalogued_operations(model, catalogue=lambda t: None) == set()


def test_an_extension_operation_needs_its_prefix_declared() -> None:
    model = Graph().inp(F32).out(F32).model(op=(7 << 16) | 3)
    v = only(validate_model(model, catalogue=lambda t: None))
    assert (v.rule, v.v) == ("model.operation.type", "V11")


def test_operands_of_unknown_type_are_not_signature_checked_twice() -> None:
    model = Graph().inp(F32).out(F32).model()
    model.main.operands[0].type = 16
    v = only(validate_model(model, catalogue=catalogue(UNARY)))
    assert v.rule == "model.operand.type"
