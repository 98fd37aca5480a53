"""One test per model rule of the validation catalogue (V1-V25): a valid hand-built model, then one broken rule."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from driver_under_test.validation import Limits, validate_model, validate_preparation_args
from harness.hal import (
    DataLocation,
    ExtensionNameAndPrefix,
    Model,
    Operand,
    Operation,
    Subgraph,
    SymmPerChannelQuantParams,
)
from harness.hal.memory import Memory, create_ashmem

from .builders import (
    LT,
    OP,
    T,
    add_model,
    chain_model,
    conv_model,
    if_model,
    per_channel_conv_model,
    rejects,
    subgraph_ref,
    tensor,
    two_output_model,
    while_model,
)

LIMITS = Limits()


@pytest.fixture
def pool() -> Iterator[Memory]:
    memory = create_ashmem(32)
    yield memory
    memory.close()


def valid(model: Model) -> Model:
    """The model, after checking that it validates."""
    validate_model(model, LIMITS)
    return model


def check(model: Model, rule: str) -> None:
    rejects(lambda: validate_model(model, LIMITS), rule)


def test_the_hand_built_models_are_valid(pool: Memory) -> None:
    for model in (add_model(), two_output_model(), chain_model(), conv_model(pool), per_channel_conv_model(),
                  if_model(), while_model()):  # fmt: skip
        validate_model(model, LIMITS)


def test_v1_an_operation_reading_a_temporary_before_its_writer_is_rejected() -> None:
    model = valid(chain_model())
    model.main.operations.reverse()
    check(model, "V1.read_before_write")


@pytest.mark.parametrize("bad_type", [-1, 16, 9999, 10002, 0x10001])
def test_v2_an_operand_type_the_hal_does_not_define_is_rejected(bad_type: int) -> None:
    model = valid(add_model())
    model.main.operands[1].type = bad_type
    check(model, "V2.operand_type")


def test_v2_a_declared_extension_type_passes_the_type_check_but_not_add() -> None:
    model = valid(add_model())
    model.extension_name_to_prefix = [ExtensionNameAndPrefix("com.example.ext", 1)]
    model.main.operands[1].type = 0x10001
    check(model, "V10.operand_type_for_operation")


def test_v3_a_scalar_with_dimensions_is_rejected() -> None:
    model = valid(add_model())
    model.main.operands[2].dimensions = [1]
    check(model, "V3.scalar_rank")


@pytest.mark.parametrize(
    ("index", "type_", "scale"),
    [
        (1, T.TENSOR_FLOAT32, 0.5),  # non-quantized with a scale
        (1, T.TENSOR_INT32, -1.0),  # negative TENSOR_INT32 scale
        (1, T.TENSOR_QUANT8_ASYMM, 0.0),  # quantized with zero scale
        (2, T.INT32, 1.0),  # scalar with a scale
    ],
)
def test_v4_a_bad_scale_is_rejected(index: int, type_: T, scale: float) -> None:
    model = valid(add_model())
    model.main.operands[index].type = type_
    model.main.operands[index].scale = scale
    check(model, "V4.scale")


@pytest.mark.parametrize(
    ("type_", "scale", "zero_point"),
    [
        (T.TENSOR_QUANT8_ASYMM, 0.5, 256),
        (T.TENSOR_QUANT8_ASYMM, 0.5, -1),
        (T.TENSOR_QUANT8_ASYMM_SIGNED, 0.5, 128),
        (T.TENSOR_QUANT16_SYMM, 0.5, 1),
        (T.TENSOR_FLOAT32, 0.0, 1),
        (T.TENSOR_INT32, 0.0, 3),
    ],
)
def test_v5_a_zero_point_out_of_the_types_range_is_rejected(type_: T, scale: float, zero_point: int) -> None:
    model = valid(add_model())
    operand = model.main.operands[0]
    operand.type, operand.scale, operand.zero_point = type_, scale, zero_point
    check(model, "V5.zero_point")


def test_v6_an_operation_writing_a_subgraph_input_is_rejected() -> None:
    model = valid(two_output_model())
    # o2 becomes a model input (as in the public lifetime mutations) while SUB still writes it.
    model.main.operands[4].lifetime = LT.SUBGRAPH_INPUT
    model.main.output_indexes = [3]
    model.main.input_indexes = [0, 1, 4]
    check(model, "V6.lifetime_vs_writer")


def test_v6_a_required_input_without_value_is_rejected() -> None:
    model = valid(add_model())
    model.main.operands[1].lifetime = LT.NO_VALUE
    model.main.input_indexes = [0]
    check(model, "V6.no_value_not_optional")


def test_v6_an_optional_input_may_have_no_value() -> None:
    # TRANSPOSE's permutation is optional: present as an operand without value.
    operands = [
        tensor([2, 3], LT.SUBGRAPH_INPUT, 1),
        tensor([2], LT.NO_VALUE, 1, T.TENSOR_INT32),
        tensor([3, 2], LT.SUBGRAPH_OUTPUT),
    ]
    validate_model(Model(main=Subgraph(operands, [Operation(OP.TRANSPOSE, [0, 1], [2])], [0], [2])), LIMITS)


def test_v6_an_unknown_lifetime_is_rejected() -> None:
    model = valid(add_model())
    model.main.operands[3].lifetime = 7
    check(model, "V6.lifetime_unknown")


def test_v7_an_output_operand_also_listed_as_input_is_rejected() -> None:
    model = valid(add_model())
    model.main.input_indexes = [0, 1, 3]
    check(model, "V7.lifetime_vs_io_lists")


def test_v7_a_model_input_missing_from_input_indexes_is_rejected() -> None:
    model = valid(add_model())
    model.main.input_indexes = [0]
    check(model, "V7.lifetime_vs_io_lists")


def test_v7_io_indexes_out_of_range_or_repeated_are_rejected() -> None:
    model = valid(add_model())
    model.main.output_indexes = [3, 4]
    check(model, "V7.io_index_range")
    model.main.output_indexes = [3, 3]
    check(model, "V7.io_index_duplicate")


@pytest.mark.parametrize("consumers", [0, 2])
def test_v8_a_wrong_number_of_consumers_is_rejected(consumers: int) -> None:
    model = valid(add_model())
    model.main.operands[0].number_of_consumers = consumers
    check(model, "V8.number_of_consumers")


def test_v9_an_operand_written_by_two_operations_is_rejected() -> None:
    model = valid(two_output_model())
    model.main.operations[1].outputs = [3]
    check(model, "V9.written_twice")


@pytest.mark.parametrize(
    ("index", "type_"),
    [(1, T.TENSOR_INT32), (1, T.TENSOR_FLOAT16), (2, T.FLOAT32), (3, T.TENSOR_QUANT8_ASYMM_SIGNED)],
)
def test_v10_an_operand_type_add_does_not_accept_is_rejected(index: int, type_: T) -> None:
    model = valid(add_model())
    operand = model.main.operands[index]
    operand.type = type_
    operand.scale = 0.5 if type_ == T.TENSOR_QUANT8_ASYMM_SIGNED else 0.0
    check(model, "V10.operand_type_for_operation")


def test_v10_a_per_channel_filter_is_accepted_only_next_to_a_quantized_input(pool: Memory) -> None:
    valid(per_channel_conv_model())
    model = valid(conv_model(pool))
    filter_ = model.main.operands[1]
    filter_.type = T.TENSOR_QUANT8_SYMM_PER_CHANNEL
    filter_.location.length = 4
    filter_.extra_params = SymmPerChannelQuantParams(scales=[1.0], channel_dim=0)
    check(model, "V10.operand_type_for_operation")


@pytest.mark.parametrize("op_type", [102, 9999, 10001, -1, 0x10000])
def test_v11_an_unknown_operation_type_is_rejected(op_type: int) -> None:
    model = valid(add_model())
    model.main.operations[0].type = op_type
    check(model, "V11.operation_type")


def test_v12_an_input_index_out_of_range_is_rejected() -> None:
    model = valid(add_model())
    model.main.operations[0].inputs = [0, 1, 4]
    check(model, "V12.input_index")


def test_v13_an_output_index_out_of_range_is_rejected() -> None:
    model = valid(add_model())
    model.main.operations[0].outputs = [4]
    check(model, "V13.output_index")


def test_v14_a_temporary_nothing_writes_is_rejected() -> None:
    model = valid(add_model())
    model.main.operands.append(tensor([2, 2], LT.TEMPORARY_VARIABLE))
    check(model, "V14.never_written")


def test_v15_removing_an_operand_breaks_the_operation_using_it() -> None:
    # Remove operand 2 (the activation) and renumber, as the public operand-removal mutation does.
    model = valid(add_model())
    del model.main.operands[2]
    model.main.operations[0].inputs = [0, 1]
    model.main.operations[0].outputs = [2]
    model.main.output_indexes = [2]
    check(model, "V17.operation_input_count")


def test_v16_removing_the_operation_leaves_the_output_unwritten() -> None:
    model = valid(add_model())
    model.main.operations.clear()
    check(model, "V14.never_written")


def test_v17_removing_a_required_input_is_rejected(pool: Memory) -> None:
    model = valid(add_model())
    model.main.operations[0].inputs = [0, 1]
    model.main.operands[2].number_of_consumers = 0
    check(model, "V17.operation_input_count")
    model = valid(conv_model(pool))
    model.main.operations[0].inputs = model.main.operations[0].inputs[:6]  # 6 inputs: no CONV_2D form has 6
    model.main.operands[6].number_of_consumers = 0
    check(model, "V17.operation_input_count")


def test_v18_removing_an_output_is_rejected() -> None:
    model = valid(add_model())
    model.main.operations[0].outputs = []
    check(model, "V18.operation_output_count")


def test_v19_an_extra_input_is_rejected() -> None:
    model = valid(add_model())
    model.main.operands.append(Operand(type=T.INT32, number_of_consumers=1, lifetime=LT.SUBGRAPH_INPUT))
    model.main.input_indexes.append(4)
    model.main.operations[0].inputs.append(4)
    check(model, "V17.operation_input_count")


def test_v20_an_extra_output_is_rejected() -> None:
    model = valid(add_model())
    model.main.operands.append(tensor([2, 2], LT.SUBGRAPH_OUTPUT))
    model.main.output_indexes.append(4)
    model.main.operations[0].outputs.append(4)
    check(model, "V18.operation_output_count")


@pytest.mark.parametrize("preference", [-1, 3, 1.0, None])
def test_v21_an_execution_preference_outside_the_enum_is_rejected(preference: object) -> None:
    for good in (0, 1, 2):
        validate_preparation_args(good, 1)
    rejects(lambda: validate_preparation_args(preference, 1), "V21.execution_preference")  # type: ignore[arg-type]


@pytest.mark.parametrize("priority", [-1, 3, "HIGH"])
def test_v22_a_priority_outside_the_enum_is_rejected(priority: object) -> None:
    for good in (0, 1, 2):
        validate_preparation_args(1, good)
    rejects(lambda: validate_preparation_args(1, priority), "V22.priority")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("location", "rule"),
    [
        (DataLocation(0, 4, 4), "V23.constant_location"),  # past the end of the 4-byte operandValues
        (DataLocation(0, 2**32 - 1, 4), "V23.constant_location"),  # offset + length wraps a uint32
        (DataLocation(1, 0, 4), "V23.constant_location"),  # CONSTANT_COPY names pool 1
        (DataLocation(0, 0, 3), "V23.constant_length"),  # shorter than an INT32
        (DataLocation(0, 0, -4), "V23.constant_location"),
    ],
)
def test_v23_a_copy_constant_outside_operand_values_or_of_the_wrong_length_is_rejected(
    location: DataLocation, rule: str
) -> None:
    model = valid(add_model())
    model.main.operands[2].location = location
    check(model, rule)


@pytest.mark.parametrize(
    ("location", "rule"),
    [
        (DataLocation(1, 8, 16), "V23.constant_location"),  # the model has one pool
        (DataLocation(0, 20, 16), "V23.constant_location"),  # ends at 36 in a 32-byte pool
        (DataLocation(0, 8, 12), "V23.constant_length"),  # a [1,2,2,1] float tensor has 16 bytes
    ],
)
def test_v23_a_reference_constant_outside_its_pool_or_of_the_wrong_length_is_rejected(
    pool: Memory, location: DataLocation, rule: str
) -> None:
    model = valid(conv_model(pool))
    model.main.operands[1].location = location
    check(model, rule)


def test_v23_a_non_constant_with_a_location_is_rejected() -> None:
    model = valid(add_model())
    model.main.operands[0].location = DataLocation(0, 0, 16)
    check(model, "V23.non_constant_location")


def test_v23_a_constant_tensor_with_unknown_dimensions_is_rejected(pool: Memory) -> None:
    model = valid(conv_model(pool))
    model.main.operands[1].dimensions = [1, 0, 2, 1]
    check(model, "V23.constant_dimensions")


@pytest.mark.parametrize(
    "params",
    [
        None,
        SymmPerChannelQuantParams(scales=[0.5, 0.25], channel_dim=4),  # rank is 4
        SymmPerChannelQuantParams(scales=[0.5, 0.25], channel_dim=-1),
        SymmPerChannelQuantParams(scales=[0.5], channel_dim=0),  # dimension 0 has 2 channels
        SymmPerChannelQuantParams(scales=[0.5, 0.0], channel_dim=0),
        SymmPerChannelQuantParams(scales=[0.5, float("nan")], channel_dim=0),
    ],
)
def test_v24_inconsistent_per_channel_parameters_are_rejected(params: SymmPerChannelQuantParams | None) -> None:
    model = valid(per_channel_conv_model())
    model.main.operands[1].extra_params = params
    check(model, "V24.per_channel_params")


def test_v24_channel_parameters_on_another_type_are_rejected() -> None:
    model = valid(add_model())
    model.main.operands[0].extra_params = SymmPerChannelQuantParams(scales=[1.0, 1.0], channel_dim=0)
    check(model, "V24.per_channel_params")


def test_v25_a_subgraph_reference_out_of_range_is_rejected() -> None:
    model = valid(if_model())
    model.main.operands[2].location = DataLocation(0, 2, 0)
    check(model, "V25.subgraph_reference")


def test_v25_a_reference_cycle_is_rejected() -> None:
    model = valid(if_model())
    # The then-branch gains an (unused) reference to itself.
    model.referenced[0].operands.append(subgraph_ref(0, consumers=0))
    check(model, "V25.reference_cycle")


def test_v25_a_referenced_subgraph_nothing_references_is_rejected() -> None:
    model = valid(if_model())
    model.referenced.append(Subgraph([tensor([2], LT.SUBGRAPH_INPUT, 1), tensor([2], LT.SUBGRAPH_OUTPUT)],
                                     [Operation(OP.RELU, [0], [1])], [0], [1]))  # fmt: skip
    check(model, "V25.unreferenced_subgraph")


def test_v25_referenced_subgraphs_are_validated_like_main() -> None:
    model = valid(while_model())
    model.referenced[1].operands[2].number_of_consumers = 2
    check(model, "V8.number_of_consumers")


def test_if_with_a_branch_taking_another_number_of_inputs_is_rejected() -> None:
    model = valid(if_model())
    branch = model.referenced[1]
    branch.operands.append(tensor([2], LT.SUBGRAPH_INPUT, 0))
    branch.input_indexes.append(2)
    check(model, "V17.control_flow_input_count")


def test_if_with_a_branch_output_of_another_type_is_rejected() -> None:
    model = valid(if_model())
    for operand in model.referenced[1].operands:
        operand.type = T.TENSOR_FLOAT16
    check(model, "V10.control_flow_operand_mismatch")


def test_if_with_a_condition_of_two_elements_is_rejected() -> None:
    model = valid(if_model())
    model.main.operands[0].dimensions = [2]
    check(model, "V10.control_flow_condition")


def test_while_whose_condition_does_not_yield_a_boolean_is_rejected() -> None:
    model = valid(while_model())
    cond = model.referenced[0]
    cond.operations[0].type = OP.ADD
    cond.operations[0].inputs = [0, 1, 3]
    cond.operands[2].type = T.TENSOR_FLOAT32
    cond.operands.append(Operand(type=T.INT32, number_of_consumers=1, lifetime=LT.CONSTANT_COPY,
                                 location=DataLocation(0, 8, 4)))  # fmt: skip
    check(model, "V10.control_flow_condition")


def test_while_with_a_body_producing_more_outputs_than_inputs_is_rejected() -> None:
    model = valid(while_model())
    body = model.referenced[1]
    body.operands.append(tensor([1], LT.SUBGRAPH_OUTPUT))
    body.output_indexes.append(4)
    body.operations.append(Operation(OP.RELU, [0], [4]))
    body.operands[0].number_of_consumers = 2
    check(model, "V18.control_flow_output_count")


def test_while_with_incompatible_loop_operand_dimensions_is_rejected() -> None:
    model = valid(while_model())
    model.main.operands[2].dimensions = [3]
    check(model, "V10.control_flow_operand_mismatch")


@pytest.mark.parametrize("junk", [None, 3, "model", Subgraph()])
def test_a_model_that_is_not_a_model_is_rejected_not_crashed(junk: object) -> None:
    rejects(lambda: validate_model(junk, LIMITS), "model.malformed")  # type: ignore[arg-type]


def test_malformed_fields_are_rejected_not_crashed() -> None:
    model = valid(add_model())
    model.main.operands[0].dimensions = "2x2"  # type: ignore[assignment]
    check(model, "model.malformed")
    model = valid(add_model())
    model.main.operations[0].inputs = [0, 1, None]  # type: ignore[list-item]
    check(model, "V12.input_index")
    model = valid(add_model())
    model.main.operands[0].dimensions = [2, -2]
    check(model, "model.dimension_value")


@pytest.mark.parametrize(
    ("position", "value", "rule"),
    [
        (3, 3, "V10.padding_scheme"),  # scheme: only 0, 1 (SAME) and 2 (VALID) exist
        (3, -1, "V10.padding_scheme"),
        (4, 0, "V10.stride"),
        (5, -2, "V10.stride"),
        (6, 4, "V10.activation"),  # fused activations are 0..3
        (6, -1, "V10.activation"),
    ],
)
def test_v10_a_constant_parameter_out_of_its_range_is_rejected(
    pool: Memory, position: int, value: int, rule: str
) -> None:
    model = valid(conv_model(pool))
    values = bytearray(model.operand_values)
    offset = model.main.operands[position].location.offset
    values[offset : offset + 4] = value.to_bytes(4, "little", signed=True)
    check(replace(model, operand_values=bytes(values)), rule)


@pytest.mark.parametrize("op", [OP.ADD, OP.SUB, OP.MUL, OP.DIV])
@pytest.mark.parametrize("code", [4, 7, -1])
def test_v10_an_elementwise_operation_with_an_unknown_fused_activation_is_rejected(op: OP, code: int) -> None:
    # Found this way: the driver accepted ADD with activation 7 (and ran it as NONE); the reference refused it.
    model = valid(add_model())
    model.main.operations[0].type = op
    check(replace(model, operand_values=code.to_bytes(4, "little", signed=True)), "V10.activation")


def test_v10_a_known_fused_activation_passes() -> None:
    for code in range(4):
        valid(replace(add_model(), operand_values=code.to_bytes(4, "little", signed=True)))


def test_v10_parameters_in_range_and_model_inputs_pass(pool: Memory) -> None:
    model = valid(conv_model(pool))
    # The stride as a model input: its value is the execution's to check.
    main = model.main
    main.operands[4] = tensor([], LT.SUBGRAPH_INPUT, 1, type_=T.INT32)
    main.input_indexes = [0, 4]
    valid(model)
