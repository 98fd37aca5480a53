"""The reference validator: which models, preparation arguments and requests an NN HAL 1.3 driver must reject.

Every finding is a `Violation` naming a stable rule id; `v` is the number of the REQUIREMENTS V catalogue entry the
rule stands for (None where the catalogue has no entry). An empty list means valid. `validate_model` checks the main
subgraph and every referenced subgraph; per-operation signatures come from the operation catalogue (harness.ops),
and an operation the catalogue does not describe yet is left unchecked (see `uncatalogued_operations`).

| rule id | V | meaning |
|---|---|---|
| model.subgraph.empty | - | a subgraph (main or referenced) has no operands or no operations |
| model.io.index | - | an inputIndexes/outputIndexes entry is not an operand index |
| model.io.duplicate | - | an operand is listed twice in inputIndexes or outputIndexes |
| model.io.lifetime | V7 | an io-listed operand lacks SUBGRAPH_INPUT/OUTPUT lifetime, or such an operand is unlisted |
| model.extension.declaration | - | extensionNameToPrefix repeats a name or a prefix |
| model.operand.type | V2 | unknown operand type, or an extension type whose prefix is not declared |
| model.operand.lifetime | - | unknown lifetime value |
| model.operand.subgraph_lifetime | - | SUBGRAPH type without SUBGRAPH lifetime, or the reverse |
| model.operand.scalar_dimensions | V3 | a scalar (or SUBGRAPH/OEM) operand has non-empty dimensions |
| model.operand.dimension_value | - | a dimension is negative or above UINT32_MAX |
| model.operand.scale | V4 | non-zero (non-quantized), negative (TENSOR_INT32), non-positive (quantized), not a number |
| model.operand.zero_point | V5 | zero point outside the type's range (0 for non-quantized and symmetric types) |
| model.operand.channel_quant | V24 | per-channel params missing or inconsistent (channelDim, scales, scale) |
| model.operand.extra_params | V24 | extraParams the operand type does not take |
| model.operand.consumers | V8 | numberOfConsumers differs from the number of operation inputs reading the operand |
| model.operand.location | V23 | a TEMPORARY/SUBGRAPH_INPUT/SUBGRAPH_OUTPUT/NO_VALUE operand has a non-empty location |
| model.operand.written_twice | V9 | two operation outputs write the same operand |
| model.operand.never_written | V14 | a TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT operand no operation writes |
| model.constant.pool_index | V23 | CONSTANT_COPY with a pool index, or CONSTANT_REFERENCE to a missing pool |
| model.constant.bounds | V23 | constant location outside operandValues or outside its pool |
| model.constant.length | V23 | constant location length differs from the operand's byte size |
| model.constant.dimensions | V23 | constant tensor without fully specified dimensions |
| model.operation.type | V11 | unknown operation type, or an extension operation whose prefix is not declared |
| model.operation.input_index | V12 | an operation input is not an operand index |
| model.operation.output_index | V13 | an operation output is not an operand index |
| model.operation.read_before_write | V1 | an operation reads an operand that no earlier operation wrote |
| model.operation.output_lifetime | V6 | an operation writes an operand not TEMPORARY_VARIABLE/SUBGRAPH_OUTPUT |
| model.operation.signature | V10 | no signature fits: v V17/V19 fewer/more inputs, V18/V20 outputs, V10 types |
| model.operation.constraint | V10 | the operand types fit a signature but its parameter check fails |
| model.subgraph.reference | V25 | SUBGRAPH operand location is not a valid index into referenced |
| model.subgraph.cycle | V25 | subgraphs reference each other in a cycle |
| model.subgraph.control_flow | V25 | an IF/WHILE branch, condition or body subgraph does not fit its operands |
| preparation.preference | V21 | execution preference outside LOW_POWER..SUSTAINED_SPEED |
| preparation.priority | V22 | priority outside LOW..HIGH |
| request.argument_count | V30 | request input/output count differs from main's inputIndexes/outputIndexes |
| request.no_value.details | V36 | an argument with hasNoValue has a location or dimensions |
| request.pool.index | V35 | an argument's pool index is not a request pool |
| request.pool.token | - | a driver-buffer pool whose token is not positive |
| request.pool.bounds | V31 | an argument's offset + length lies outside its shared-memory pool |
| request.pool.driver_buffer_location | V31 | an argument in a driver buffer has a non-zero offset or length |
| request.dimensions.conflict | V32 | argument dimensions conflict with the model operand's rank or dimensions |
| request.dimensions.unknown_input | V33 | an input's dimensions stay unknown after merging with the model |
| request.input.length | - | an input's length differs from its byte size (fully known dimensions) |
| request.output.overlap | V34 | an output overlaps another output or an input |
| request.output.overlaps_constant | V34 | an output overlaps a CONSTANT_REFERENCE region (same memory object) |
| request.fenced.unspecified_output | V37 | fenced execution with an output of unknown or zero dimensions |

Not validation errors: an output buffer smaller than the output (OUTPUT_INSUFFICIENT_SIZE at execution); request
dimensions on scalar arguments (the HAL ignores them). V15-V20 mutations surface through the rules above (a removed
operand or required input, an extra input or output: model.operation.signature; a removed operation:
model.operand.never_written).
"""

from __future__ import annotations

from collections.abc import Callable

from harness import ops
from harness.hal import ExecutionPreference, Model, OperationType, Priority, Request, Subgraph, is_extension_type
from harness.ops import OpSpec
from harness.reference._control_flow import check_control_flow, check_cycles
from harness.reference._model_rules import (
    UINT32_MAX,
    check_dataflow,
    check_extension_declarations,
    check_io_indexes,
    check_operands,
    extension_prefix,
)
from harness.reference._request_rules import check_request
from harness.reference._rules import RULES, Rule, Violation, violation
from harness.reference._signature import check_signature

__all__ = [
    "RULES",
    "Rule",
    "Violation",
    "uncatalogued_operations",
    "validate_fenced_request",
    "validate_model",
    "validate_preparation",
    "validate_request",
]

# How the validator finds an operation's spec; tests may pass their own.
Catalogue = Callable[[int], OpSpec | None]

_KNOWN_OPERATIONS = frozenset(int(t) for t in OperationType)


def validate_model(model: Model, *, catalogue: Catalogue = ops.get) -> list[Violation]:
    """Every rule the model breaks (empty = valid), over main and all referenced subgraphs."""
    found = check_extension_declarations(model)
    prefixes = {e.prefix for e in model.extension_name_to_prefix}
    for where, graph in _subgraphs(model):
        if not graph.operands or not graph.operations:
            found.append(
                violation(
                    "model.subgraph.empty",
                    f"{where} has {len(graph.operands)} operands and {len(graph.operations)} operations",
                )
            )
        operand_found, broken = check_operands(model, graph, where, prefixes)
        found += operand_found
        found += check_io_indexes(graph, where)
        found += _check_operations(model, graph, where, prefixes, broken, catalogue)
        found += check_dataflow(graph, where)
    found += check_cycles(model)
    return found


def validate_preparation(preference: int, priority: int) -> list[Violation]:
    """The prepareModel arguments outside their enumerations."""
    found = []
    if preference not in {int(p) for p in ExecutionPreference}:
        found.append(violation("preparation.preference", f"execution preference {preference}"))
    if priority not in {int(p) for p in Priority}:
        found.append(violation("preparation.priority", f"priority {priority}"))
    return found


def validate_request(model: Model, request: Request) -> list[Violation]:
    """Every rule the request breaks against the (assumed valid) model's main inputs and outputs."""
    return check_request(model, request, fenced=False)


def validate_fenced_request(model: Model, request: Request) -> list[Violation]:
    """validate_request plus the fenced-execution rule: every output fully specified and non-empty."""
    return check_request(model, request, fenced=True)


def uncatalogued_operations(model: Model, *, catalogue: Catalogue = ops.get) -> set[int]:
    """Operation types in the model whose signatures the validator cannot check (no catalogue entry)."""
    return {
        int(op.type)
        for _, graph in _subgraphs(model)
        for op in graph.operations
        if _needs_signature(int(op.type)) and not _catalogued_spec(int(op.type), catalogue)
    }


def _subgraphs(model: Model) -> list[tuple[str, Subgraph]]:
    return [("main", model.main), *((f"referenced[{i}]", g) for i, g in enumerate(model.referenced))]


def _operation_type_is_valid(op_type: int, prefixes: set[int]) -> bool:
    if is_extension_type(op_type):
        return op_type <= UINT32_MAX and extension_prefix(op_type) in prefixes
    return op_type in _KNOWN_OPERATIONS


def _needs_signature(op_type: int) -> bool:
    # OEM and extension operations have no signature the HAL could know.
    return op_type in _KNOWN_OPERATIONS and op_type != OperationType.OEM_OPERATION


def _catalogued_spec(op_type: int, catalogue: Catalogue) -> OpSpec | None:
    spec = catalogue(op_type)
    return spec if spec is not None and spec.signatures else None


def _check_operations(
    model: Model, graph: Subgraph, where: str, prefixes: set[int], broken: set[int], catalogue: Catalogue
) -> list[Violation]:
    found: list[Violation] = []
    count = len(graph.operands)
    for index, operation in enumerate(graph.operations):
        op_type = int(operation.type)
        label = f"{where} operation {index}"
        bad = False
        for rule, kind, indexes in (
            ("model.operation.input_index", "input", operation.inputs),
            ("model.operation.output_index", "output", operation.outputs),
        ):
            for position, k in enumerate(indexes):
                if not 0 <= k < count:
                    bad = True
                    found.append(violation(rule, f"{label} {kind} {position} is operand {k} of {count}"))
        if not _operation_type_is_valid(op_type, prefixes):
            found.append(violation("model.operation.type", f"{label}: invalid operation type {op_type}"))
            continue
        # Signatures say nothing useful about operands that do not exist or whose type is unknown.
        if bad or not _needs_signature(op_type) or any(k in broken for k in (*operation.inputs, *operation.outputs)):
            continue
        spec = _catalogued_spec(op_type, catalogue)
        if spec is not None:
            found += check_signature(model, graph, operation, spec, label)
        found += check_control_flow(model, graph, operation, label, catalogued=spec is not None)
    return found
