"""The reference validator's rule registry and its finding type, shared by the private rule modules."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One broken validation rule: its stable id, a readable message and its V-catalogue number (if any)."""

    rule: str
    message: str
    v: str | None


@dataclass(frozen=True)
class Rule:
    """A validation rule: stable id, the V-catalogue number it stands for, and what it forbids."""

    id: str
    v: str | None
    meaning: str


RULES: dict[str, Rule] = {}


def _rule(rule_id: str, v: str | None, meaning: str) -> None:
    if rule_id in RULES:
        raise RuntimeError(f"validation rule {rule_id} registered twice")
    RULES[rule_id] = Rule(rule_id, v, meaning)


def violation(rule_id: str, message: str, v: str | None = None) -> Violation:
    """A Violation of a registered rule; `v` overrides the rule's V number (signature mismatches vary)."""
    rule = RULES[rule_id]
    return Violation(rule_id, message, v if v is not None else rule.v)


# Model structure.
_rule("model.subgraph.empty", None, "a subgraph (main or referenced) has no operands or no operations")
_rule("model.io.index", None, "an inputIndexes/outputIndexes entry is not an operand index")
_rule("model.io.duplicate", None, "an operand is listed twice in inputIndexes or outputIndexes")
_rule(
    "model.io.lifetime",
    "V7",
    "an inputIndexes/outputIndexes operand lacks SUBGRAPH_INPUT/SUBGRAPH_OUTPUT lifetime, or such an operand is "
    "not listed",
)
_rule("model.extension.declaration", None, "extensionNameToPrefix repeats a name or a prefix")
# Operands.
_rule("model.operand.type", "V2", "unknown operand type, or an extension type whose prefix is not declared")
_rule("model.operand.lifetime", None, "unknown lifetime value")
_rule("model.operand.subgraph_lifetime", None, "SUBGRAPH type without SUBGRAPH lifetime, or the reverse")
_rule("model.operand.scalar_dimensions", "V3", "a scalar (or SUBGRAPH/OEM) operand has non-empty dimensions")
_rule("model.operand.dimension_value", None, "a dimension is negative or above UINT32_MAX")
_rule(
    "model.operand.scale",
    "V4",
    "non-zero scale on a non-quantized type, negative scale on TENSOR_INT32, non-positive scale on a quantized type, "
    "or a scale that is not a number",
)
_rule("model.operand.zero_point", "V5", "zero point outside the type's range (0 for non-quantized and symmetric types)")
_rule(
    "model.operand.channel_quant",
    "V24",
    "per-channel params missing or inconsistent: channelDim >= rank, scales count != dimensions[channelDim], "
    "unknown channel dimension, a scale <= 0, or a non-zero scale field",
)
_rule("model.operand.extra_params", "V24", "extraParams that the operand type does not take")
_rule("model.operand.consumers", "V8", "numberOfConsumers differs from the number of operation inputs reading it")
_rule("model.operand.location", "V23", "a non-constant, non-SUBGRAPH operand has a non-empty location")
_rule("model.operand.written_twice", "V9", "two operation outputs write the same operand")
_rule("model.operand.never_written", "V14", "a TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT operand no operation writes")
# Constants.
_rule("model.constant.pool_index", "V23", "CONSTANT_COPY with a pool index, or CONSTANT_REFERENCE to a missing pool")
_rule("model.constant.bounds", "V23", "constant location outside operandValues or outside its pool")
_rule("model.constant.length", "V23", "constant location length differs from the operand's byte size")
_rule("model.constant.dimensions", "V23", "constant tensor without fully specified dimensions")
# Operations.
_rule("model.operation.type", "V11", "unknown operation type, or an extension operation whose prefix is not declared")
_rule("model.operation.input_index", "V12", "an operation input is not an operand index")
_rule("model.operation.output_index", "V13", "an operation output is not an operand index")
_rule("model.operation.read_before_write", "V1", "an operation reads an operand that no earlier operation wrote")
_rule(
    "model.operation.output_lifetime",
    "V6",
    "an operation writes an operand whose lifetime is not TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT",
)
_rule(
    "model.operation.signature",
    "V10",
    "no catalogued signature accepts the operation's operand count, types, ranks or constness "
    "(V17/V19 fewer/more inputs, V18/V20 fewer/more outputs, V10 types)",
)
_rule("model.operation.constraint", "V10", "the operand types match a signature but its parameter check fails")
# Referenced subgraphs.
_rule("model.subgraph.reference", "V25", "SUBGRAPH operand location is not a valid index into referenced")
_rule("model.subgraph.cycle", "V25", "subgraphs reference each other in a cycle")
_rule(
    "model.subgraph.control_flow",
    "V25",
    "an IF/WHILE operation's branch, condition or body subgraph does not fit its operands",
)
# Preparation arguments.
_rule("preparation.preference", "V21", "execution preference outside LOW_POWER..SUSTAINED_SPEED")
_rule("preparation.priority", "V22", "priority outside LOW..HIGH")
# Requests.
_rule("request.argument_count", "V30", "request input/output count differs from main's inputIndexes/outputIndexes")
_rule("request.no_value.details", "V36", "an argument with hasNoValue has a location or dimensions")
_rule("request.pool.index", "V35", "an argument's pool index is not a request pool")
_rule("request.pool.token", None, "a driver-buffer pool with a token that is not positive")
_rule("request.pool.bounds", "V31", "an argument's offset + length lies outside its shared-memory pool")
_rule("request.pool.driver_buffer_location", "V31", "an argument in a driver buffer has a non-zero offset or length")
_rule("request.dimensions.conflict", "V32", "argument dimensions conflict with the model operand's rank or dimensions")
_rule("request.dimensions.unknown_input", "V33", "an input's dimensions stay unknown after merging with the model")
_rule("request.input.length", None, "an input's length differs from its byte size (fully known dimensions)")
_rule("request.output.overlap", "V34", "an output overlaps another output or an input")
_rule("request.output.overlaps_constant", "V34", "an output overlaps a CONSTANT_REFERENCE region of the model")
_rule("request.fenced.unspecified_output", "V37", "fenced execution with an output of unknown or zero dimensions")
