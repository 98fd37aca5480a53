"""The driver's validation of models, preparation arguments and requests (REQUIREMENTS §3, D14, D25, D26).

Every refusal is a DriverError: INVALID_ARGUMENT naming the broken rule, or RESOURCE_EXHAUSTED_PERSISTENT when
a size passes one of the driver's Limits (checked before any work proportional to that size). The rule id is
stable; findings, tests and reports share it. A model fails with the first problem met, checks running in the
order: limits, operands, subgraph input/output lists, subgraph references, operations, data flow.

| rule id | catalogue | the claim |
|---|---|---|
| limits.max_subgraphs | D26 | at most `max_subgraphs` subgraphs (main + referenced) |
| limits.max_operands | D26 | at most `max_operands` operands over all subgraphs |
| limits.max_operations | D26 | at most `max_operations` operations over all subgraphs |
| limits.max_rank | D26 | no operand or request argument has more than `max_rank` dimensions |
| limits.max_elements_per_operand | D26 | the known dimensions of an operand multiply to at most the limit |
| limits.max_total_constant_bytes | D26 | the model's constants hold at most the limit in bytes |
| limits.max_request_args | D26 | a request has at most the limit of inputs, of outputs and of pools |
| model.malformed | D25 | the model is made of the HAL structures, with integers where the HAL has them |
| model.dimension_value | D25 | every dimension is a uint32 |
| V1.read_before_write | V1 | an operation reads a temporary or output only after the operation writing it |
| V2.operand_type | V2 | operand types are HAL types, or extension types whose prefix the model declares |
| V2.extension_prefix | V2 | extension names and prefixes (1..65535) map one to one |
| V3.scalar_rank | V3 | scalars (and SUBGRAPH, OEM) have no dimensions |
| V4.scale | V4 | finite; > 0 for quantized types, >= 0 for TENSOR_INT32, 0 otherwise (per-channel too) |
| V5.zero_point | V5 | the zero point is in the type's range (0 for types without one) |
| V6.lifetime_unknown | V6 | lifetimes are HAL lifetimes |
| V6.subgraph_lifetime | V6 | type SUBGRAPH iff lifetime SUBGRAPH |
| V6.lifetime_vs_writer | V6 | only TEMPORARY_VARIABLE and SUBGRAPH_OUTPUT operands are operation outputs |
| V6.no_value_not_optional | V6 | a NO_VALUE operand feeds only optional operation inputs |
| V7.io_index_range | V7 | inputIndexes/outputIndexes are operand indexes of their subgraph |
| V7.io_index_duplicate | V7 | no operand is listed twice as a subgraph input or output |
| V7.lifetime_vs_io_lists | V7 | SUBGRAPH_INPUT/OUTPUT operands are exactly those in inputIndexes/outputIndexes |
| V7.no_outputs | V7 | every subgraph has at least one output |
| V8.number_of_consumers | V8 | numberOfConsumers counts the operation inputs naming the operand |
| V9.written_twice | V9 | no operand is written by two operations (or twice by one) |
| V10.operand_type_for_operation | V10 | each operand's type is one the operation accepts at that position |
| V10.fixed_output_quantization | V10 | outputs whose scale and zero point the HAL fixes have exactly those |
| V10.fixed_input_quantization | V10 | inputs whose scale and zero point the HAL fixes have exactly those |
| V10.same_quantization | V10 | outputs that keep an input's quantization have its scale and zero point |
| V10.bias_quantization | V10 | a TENSOR_INT32 bias has zero point 0 and scale input scale * weights scale |
| V10.control_flow_operand_mismatch | V10 | IF/WHILE operands are compatible with the referenced subgraphs' |
| V10.control_flow_condition | V10 | IF's condition and WHILE's condition output are TENSOR_BOOL8 of shape [1] |
| V11.operation_type | V11 | operation types are 0..101, OEM_OPERATION, or declared extension operations |
| V12.input_index | V12 | operation inputs are operand indexes of the subgraph |
| V13.output_index | V13 | operation outputs are operand indexes of the subgraph |
| V14.never_written | V14 | every temporary and subgraph output is written by an operation |
| V17.operation_input_count | V15, V17, V19 | an operation has as many inputs as one of its forms |
| V17.control_flow_input_count | V17, V19 | IF/WHILE pass as many operands as the referenced subgraphs take |
| V18.operation_output_count | V18, V20 | an operation has as many outputs as one of its forms |
| V18.control_flow_output_count | V18, V20 | IF/WHILE outputs agree with the referenced subgraphs' outputs |
| V21.execution_preference | V21 | the preference is LOW_POWER, FAST_SINGLE_ANSWER or SUSTAINED_SPEED |
| V22.priority | V22 | the priority is LOW, MEDIUM or HIGH |
| V23.constant_location | V23 | a constant lies inside operandValues (pool 0) or inside an existing model pool |
| V23.constant_length | V23 | a constant's length is its operand's byte size |
| V23.constant_dimensions | V23 | constant tensors have fully specified dimensions |
| V23.constant_pool | V23 | model pools are shared memories |
| V23.non_constant_location | V23 | operands that are not constants or subgraph references have an empty location |
| V24.per_channel_params | V24 | channel params only on QUANT8_SYMM_PER_CHANNEL: channelDim < rank, a scale > 0 each |
| V25.subgraph_reference | V25 | a SUBGRAPH operand's location.offset indexes `referenced` (pool index and length 0) |
| V25.reference_cycle | V25 | subgraph references form no cycle |
| V25.unreferenced_subgraph | V25 | every referenced subgraph is reachable from main |
| request.malformed | D25 | the request is made of the HAL structures |
| V30.argument_count | V30 | one request input per model input, one output per model output |
| V31.location_out_of_pool | V31 | offset + length fits in the shared memory (uint32 values, no wrap-around) |
| V31.driver_buffer_location | V31 | a driver-buffer argument has offset 0 and length 0 |
| V31.input_length | V31 | an input's length is its byte size |
| V32.dimensions_conflict | V32 | request dimensions agree with the model operand's (none for scalars) |
| V33.input_dimensions_unspecified | V33 | inputs end fully specified |
| V34.outputs_overlap | V34, D14 | an output overlaps no output, input or CONSTANT_REFERENCE in the same memory |
| V34.driver_buffer_aliasing | V34, D16 | a driver buffer written by an output is used by no other argument |
| V35.pool_index | V35 | arguments name existing request pools |
| V35.pool_kind | V35 | request pools are shared memories or driver-buffer tokens |
| V35.unknown_buffer_token | V35 | driver-buffer tokens are ones this device handed out |
| V36.no_value_with_location | V36 | an argument without value has an empty location and no dimensions |
| V37.fenced_output_unspecified | V37 | outputs of a fenced execution are fully specified and not zero-sized |

V15 (operand removed) and V16 (operation removed) have no rule of their own: they surface as the broken
counts, indexes or unwritten operands listed above.
"""

from __future__ import annotations

from driver_under_test.errors import invalid
from driver_under_test.validation.limits import Limits
from driver_under_test.validation.model import validate_model
from driver_under_test.validation.operands import as_int
from driver_under_test.validation.request import validate_request
from harness.hal import ExecutionPreference, Priority

_PREFERENCES = frozenset(int(p) for p in ExecutionPreference)
_PRIORITIES = frozenset(int(p) for p in Priority)


def validate_preparation_args(preference: int, priority: int) -> None:
    """Raise INVALID_ARGUMENT for an execution preference (V21) or priority (V22) the HAL does not define."""
    if preference.__class__ is int and priority.__class__ is int:
        if preference in _PREFERENCES and priority in _PRIORITIES:
            return
    for value, known, what, rule in (
        (preference, _PREFERENCES, "execution preference", "V21.execution_preference"),
        (priority, _PRIORITIES, "priority", "V22.priority"),
    ):
        v = as_int(value, what, rule)
        if v not in known:
            raise invalid(f"{what} {v} is not one the HAL defines", rule)


__all__ = ["Limits", "validate_model", "validate_preparation_args", "validate_request"]
