"""The reference validator against the V catalogue: one row per rule, each a small valid model or request that a
single mutation breaks. Every row first checks that the unmutated subject is valid, then that the mutation is
reported under the expected rule id (and no rule the mutation does not also break)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from harness.hal import (
    DataLocation,
    ExecutionPreference,
    Model,
    Operation,
    Priority,
    Request,
    RequestArgument,
    Subgraph,
    SymmPerChannelQuantParams,
)
from harness.hal import OperandLifeTime as L
from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.reference import (
    RULES,
    uncatalogued_operations,
    validate_fenced_request,
    validate_model,
    validate_preparation,
    validate_request,
)
from harness.reference import validator as validator_module
from tests.reference.conftest import (
    add_model,
    add_request,
    chain_model,
    if_model,
    operand,
    per_channel_conv_model,
    pool_model,
    quant_add_model,
    recount,
)

# ---------------------------------------------------------------------------------------------------------------
# Mutations (each returns the mutated subject)


def remove_operand(model: Model, index: int) -> Model:
    """Remove operand `index` of main, renumbering every reference to later operands (as the VTS mutation does)."""
    main = model.main

    def renumber(indexes: list[int]) -> list[int]:
        return [i - (i > index) for i in indexes if i != index]

    del main.operands[index]
    for op in main.operations:
        op.inputs, op.outputs = renumber(op.inputs), renumber(op.outputs)
    main.input_indexes, main.output_indexes = renumber(main.input_indexes), renumber(main.output_indexes)
    return model


def mutate(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Wrap an in-place mutation (whatever it returns) so that it returns its subject."""

    def run(subject: Any) -> Any:
        fn(subject)
        return subject

    return run


def set_operand(graph_of: Callable[[Model], Subgraph], index: int, **changes: Any) -> Callable[[Model], Model]:
    """A mutation setting attributes of one operand."""

    def run(model: Model) -> Model:
        o = graph_of(model).operands[index]
        for k, v in changes.items():
            setattr(o, k, v)
        return model

    return run


def main_of(model: Model) -> Subgraph:
    return model.main


def make_t_constant(model: Model) -> None:
    """chain_model: t becomes a CONSTANT_COPY (well formed) while the first ADD still writes it."""
    t = model.main.operands[3]
    offset = len(model.operand_values)
    model.operand_values += bytes(8)
    t.lifetime = L.CONSTANT_COPY
    t.location = DataLocation(0, offset, 8)


def write_out_twice(model: Model) -> None:
    model.main.operations.append(Operation(Op.ADD, [0, 1, 2], [3]))
    recount(model)


def extra_output(model: Model) -> None:
    model.main.operands.append(operand(T.TENSOR_FLOAT32, (2,)))
    model.main.operations[0].outputs.append(len(model.main.operands) - 1)


def request_mutation(fn: Callable[[Request], None]) -> Callable[[tuple[Model, Request]], tuple[Model, Request]]:
    def run(subject: tuple[Model, Request]) -> tuple[Model, Request]:
        fn(subject[1])
        return subject

    return run


# ---------------------------------------------------------------------------------------------------------------
# The table


@dataclass
class Row:
    v: str
    what: str
    kind: str  # model | request | fenced | preparation
    base: Callable[[], Any]
    mutation: Callable[[Any], Any]
    rule: str
    also: frozenset[str] = field(default_factory=frozenset)
    expected_v: str | None = None  # the V number the violation carries, when not the row's own

    @property
    def id(self) -> str:
        return f"{self.v}-{self.what}"


def _rows() -> list[Row]:
    never_written = frozenset({"model.operand.never_written"})
    rows = [
        Row(
            "V1",
            "operations-out-of-order",
            "model",
            chain_model,
            mutate(lambda m: m.main.operations.reverse()),
            "model.operation.read_before_write",
        ),
        *(
            Row("V2", f"type-{t}", "model", add_model, set_operand(main_of, 0, type=t), "model.operand.type")
            for t in (-1, 16, 9999, 10002)
        ),
        Row(
            "V3",
            "scalar-with-dimensions",
            "model",
            add_model,
            set_operand(main_of, 2, dimensions=[1]),
            "model.operand.scalar_dimensions",
        ),
        Row("V4", "float-nonzero-scale", "model", add_model, set_operand(main_of, 0, scale=0.5), "model.operand.scale"),
        Row(
            "V4",
            "int32-negative-scale",
            "model",
            lambda: add_model(T.TENSOR_INT32),
            set_operand(main_of, 0, scale=-1.0),
            "model.operand.scale",
        ),
        Row(
            "V4",
            "quant-zero-scale",
            "model",
            quant_add_model,
            set_operand(main_of, 0, scale=0.0),
            "model.operand.scale",
        ),
        Row(
            "V5",
            "quant8-zero-point-256",
            "model",
            quant_add_model,
            set_operand(main_of, 0, zero_point=256),
            "model.operand.zero_point",
        ),
        Row(
            "V5",
            "quant8-zero-point--1",
            "model",
            quant_add_model,
            set_operand(main_of, 1, zero_point=-1),
            "model.operand.zero_point",
        ),
        Row(
            "V5",
            "float-zero-point",
            "model",
            add_model,
            set_operand(main_of, 3, zero_point=1),
            "model.operand.zero_point",
        ),
        Row(
            "V6",
            "operation-writes-constant",
            "model",
            chain_model,
            mutate(make_t_constant),
            "model.operation.output_lifetime",
        ),
        Row(
            "V7",
            "input-not-listed",
            "model",
            add_model,
            mutate(lambda m: setattr(m.main, "input_indexes", [1])),
            "model.io.lifetime",
        ),
        Row(
            "V7",
            "listed-output-is-temporary",
            "model",
            chain_model,
            mutate(lambda m: setattr(m.main, "output_indexes", [3, 4])),
            "model.io.lifetime",
        ),
        Row(
            "V8",
            "consumers",
            "model",
            add_model,
            set_operand(main_of, 0, number_of_consumers=2),
            "model.operand.consumers",
        ),
        Row("V9", "written-twice", "model", add_model, mutate(write_out_twice), "model.operand.written_twice"),
        Row(
            "V10",
            "activation-float",
            "model",
            add_model,
            set_operand(main_of, 2, type=T.FLOAT32),
            "model.operation.signature",
        ),
        *(
            Row(
                "V11",
                f"operation-{t}",
                "model",
                add_model,
                mutate(lambda m, t=t: setattr(m.main.operations[0], "type", t)),
                "model.operation.type",
            )
            for t in (102, 9999, 10001)
        ),
        Row(
            "V12",
            "input-index",
            "model",
            add_model,
            mutate(lambda m: (m.main.operations[0].inputs.__setitem__(2, 99), recount(m))),
            "model.operation.input_index",
        ),
        Row(
            "V13",
            "output-index",
            "model",
            add_model,
            mutate(lambda m: m.main.operations[0].outputs.__setitem__(0, 99)),
            "model.operation.output_index",
            also=never_written,
        ),
        Row(
            "V14",
            "temporary-never-written",
            "model",
            add_model,
            mutate(lambda m: m.main.operands.append(operand(T.TENSOR_FLOAT32, (2,)))),
            "model.operand.never_written",
        ),
        Row(
            "V15",
            "activation-operand-removed",
            "model",
            add_model,
            lambda m: remove_operand(m, 2),
            "model.operation.signature",
            expected_v="V17",
        ),
        Row(
            "V16",
            "operation-removed",
            "model",
            chain_model,
            mutate(lambda m: m.main.operations.pop()),
            "model.operand.never_written",
            also=frozenset({"model.operand.consumers"}),
            expected_v="V14",
        ),
        Row(
            "V17",
            "required-input-removed",
            "model",
            add_model,
            mutate(lambda m: (m.main.operations[0].inputs.pop(), recount(m))),
            "model.operation.signature",
        ),
        Row(
            "V18",
            "output-removed",
            "model",
            add_model,
            mutate(lambda m: m.main.operations[0].outputs.clear()),
            "model.operation.signature",
            also=never_written,
        ),
        Row(
            "V19",
            "extra-input",
            "model",
            add_model,
            mutate(lambda m: (m.main.operations[0].inputs.append(1), recount(m))),
            "model.operation.signature",
        ),
        Row("V20", "extra-output", "model", add_model, mutate(extra_output), "model.operation.signature"),
        *(
            Row(
                "V21",
                f"preference-{p}",
                "preparation",
                lambda: (ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM),
                lambda s, p=p: (p, s[1]),
                "preparation.preference",
            )
            for p in (-1, 3)
        ),
        *(
            Row(
                "V22",
                f"priority-{p}",
                "preparation",
                lambda: (ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM),
                lambda s, p=p: (s[0], p),
                "preparation.priority",
            )
            for p in (-1, 3)
        ),
        Row(
            "V23",
            "copy-outside-operand-values",
            "model",
            add_model,
            set_operand(main_of, 2, location=DataLocation(0, 4, 4)),
            "model.constant.bounds",
        ),
        Row(
            "V23",
            "copy-length-not-size",
            "model",
            add_model,
            set_operand(main_of, 2, location=DataLocation(0, 0, 2)),
            "model.constant.length",
        ),
        Row(
            "V23",
            "copy-with-pool-index",
            "model",
            add_model,
            set_operand(main_of, 2, location=DataLocation(1, 0, 4)),
            "model.constant.pool_index",
        ),
        Row(
            "V23",
            "reference-missing-pool",
            "model",
            pool_model,
            set_operand(main_of, 1, location=DataLocation(1, 0, 8)),
            "model.constant.pool_index",
        ),
        Row(
            "V23",
            "reference-outside-pool",
            "model",
            pool_model,
            set_operand(main_of, 1, location=DataLocation(0, 4, 8)),
            "model.constant.bounds",
        ),
        Row(
            "V23",
            "temporary-with-location",
            "model",
            chain_model,
            set_operand(main_of, 3, location=DataLocation(0, 0, 8)),
            "model.operand.location",
        ),
        Row(
            "V24",
            "channel-dim-beyond-rank",
            "model",
            per_channel_conv_model,
            set_operand(main_of, 1, extra_params=SymmPerChannelQuantParams([0.5, 0.25], 4)),
            "model.operand.channel_quant",
        ),
        Row(
            "V24",
            "scale-count",
            "model",
            per_channel_conv_model,
            set_operand(main_of, 1, extra_params=SymmPerChannelQuantParams([0.5], 0)),
            "model.operand.channel_quant",
        ),
        Row(
            "V24",
            "zero-channel-scale",
            "model",
            per_channel_conv_model,
            set_operand(main_of, 1, extra_params=SymmPerChannelQuantParams([0.5, 0.0], 0)),
            "model.operand.channel_quant",
        ),
        Row(
            "V24",
            "scale-field-set",
            "model",
            per_channel_conv_model,
            set_operand(main_of, 1, scale=0.5),
            "model.operand.channel_quant",
        ),
        Row(
            "V24",
            "params-missing",
            "model",
            per_channel_conv_model,
            set_operand(main_of, 1, extra_params=None),
            "model.operand.channel_quant",
        ),
        Row(
            "V24",
            "params-on-quant8-asymm",
            "model",
            per_channel_conv_model,
            set_operand(main_of, 0, extra_params=SymmPerChannelQuantParams([1.0], 3)),
            "model.operand.extra_params",
        ),
        Row(
            "V25",
            "reference-out-of-range",
            "model",
            if_model,
            set_operand(main_of, 3, location=DataLocation(0, 2, 0)),
            "model.subgraph.reference",
        ),
        Row(
            "V25",
            "reference-cycle",
            "model",
            if_model,
            set_operand(lambda m: m.referenced[1], 2, location=DataLocation(0, 1, 0)),
            "model.subgraph.cycle",
        ),
        Row(
            "V25",
            "branch-output-mismatch",
            "model",
            if_model,
            set_operand(main_of, 4, dimensions=[3]),
            "model.subgraph.control_flow",
        ),
        Row(
            "V30",
            "input-removed",
            "request",
            add_request,
            request_mutation(lambda r: r.inputs.pop()),
            "request.argument_count",
        ),
        Row(
            "V30",
            "output-added",
            "request",
            add_request,
            request_mutation(lambda r: r.outputs.append(RequestArgument(has_no_value=True))),
            "request.argument_count",
        ),
        Row(
            "V31",
            "location-beyond-pool",
            "request",
            add_request,
            request_mutation(lambda r: setattr(r.inputs[1], "location", DataLocation(0, 20, 8))),
            "request.pool.bounds",
        ),
        Row(
            "V32",
            "dimension-conflict",
            "request",
            add_request,
            request_mutation(lambda r: setattr(r.inputs[0], "dimensions", [3])),
            "request.dimensions.conflict",
        ),
        Row(
            "V32",
            "rank-conflict",
            "request",
            add_request,
            request_mutation(lambda r: setattr(r.inputs[0], "dimensions", [2, 1])),
            "request.dimensions.conflict",
        ),
        Row(
            "V33",
            "unknown-input-dimensions",
            "request",
            lambda: add_request(add_model(a_dims=(0,))),
            request_mutation(lambda r: setattr(r.inputs[0], "dimensions", [])),
            "request.dimensions.unknown_input",
        ),
        Row(
            "V34",
            "output-overlaps-input",
            "request",
            add_request,
            request_mutation(lambda r: setattr(r.outputs[0], "location", DataLocation(0, 12, 8))),
            "request.output.overlap",
        ),
        Row(
            "V35",
            "pool-index",
            "request",
            add_request,
            request_mutation(lambda r: setattr(r.inputs[0], "location", DataLocation(1, 0, 8))),
            "request.pool.index",
        ),
        Row(
            "V36",
            "no-value-with-location",
            "request",
            add_request,
            request_mutation(lambda r: setattr(r.inputs[1], "has_no_value", True)),
            "request.no_value.details",
        ),
        Row(
            "V36",
            "no-value-with-dimensions",
            "request",
            add_request,
            request_mutation(lambda r: r.inputs.__setitem__(0, RequestArgument(has_no_value=True, dimensions=[2]))),
            "request.no_value.details",
        ),
        Row(
            "V37",
            "fenced-unknown-output",
            "fenced",
            lambda: add_request(add_model(out_dims=(0,))),
            request_mutation(lambda r: setattr(r.outputs[0], "dimensions", [])),
            "request.fenced.unspecified_output",
        ),
    ]
    return rows


ROWS = _rows()
CATALOGUE_RULES = {"model.operation.signature", "model.operation.constraint"}


def model_of(subject: Any) -> Model | None:
    """The model a row's subject holds, if any."""
    if isinstance(subject, Model):
        return subject
    if isinstance(subject, tuple) and subject and isinstance(subject[0], Model):
        return subject[0]
    return None


def judge(kind: str, subject: Any) -> list:
    """What the validator finds in a subject of this row kind."""
    if kind == "preparation":
        return validate_preparation(*subject)
    if kind == "model":
        return validate_model(subject)
    model, request = subject
    found = validate_model(model)
    return found + (validate_fenced_request if kind == "fenced" else validate_request)(model, request)


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_each_v_rule_is_reported_under_its_rule_id(row: Row) -> None:
    subject = row.base()
    model = model_of(subject)
    if model is not None and row.rule in CATALOGUE_RULES:
        missing = uncatalogued_operations(model)
        assert not missing, f"harness.ops has no signatures yet for {sorted(Op(t).name for t in missing)}"
    assert judge(row.kind, subject) == [], "the unmutated subject must be valid"
    found = judge(row.kind, row.mutation(subject))
    rules = {v.rule for v in found}
    assert row.rule in rules, found
    assert rules <= {row.rule} | row.also, found
    assert any(v.rule == row.rule and v.v == (row.expected_v or row.v) for v in found), found


def test_the_table_covers_the_whole_v_catalogue() -> None:
    wanted = {f"V{n}" for n in [*range(1, 26), *range(30, 38)]}
    assert wanted <= {r.v for r in ROWS}


def test_docstring_table_lists_every_registered_rule_with_its_v_number() -> None:
    doc = validator_module.__doc__ or ""
    table = dict(re.findall(r"^\| ([a-z_.]+) \| (V\d+|-) \|", doc, flags=re.MULTILINE))
    registered = {r.id: (r.v or "-") for r in RULES.values()}
    assert table == registered


def test_validation_leaves_the_model_untouched() -> None:
    model = chain_model()
    before = repr(model)
    validate_model(model)
    validate_request(*add_request(model))
    assert repr(model) == before
