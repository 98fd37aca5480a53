"""Validation of a whole model: its operands, subgraph interfaces, references, operations and data flow.

Checks run in a fixed order so that one model always fails with the same rule: limits, extension prefixes,
every operand of every subgraph, each subgraph's input/output lists, subgraph references, every operation
(type, operand indexes, signature, control flow), then data flow (writers, execution order, consumers).

Every model is validated on every call, and most pass most checks: each operand, operation, input/output list
and data flow is first judged by a fast check that only says yes (without building a message). Only what it
does not accept goes through the complete check, which finds the first problem and names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from driver_under_test.errors import DriverError, invalid
from driver_under_test.faults import FaultSet, define
from driver_under_test.validation.bias_quantization import BIAS_OPERATIONS, check_bias_quantization
from driver_under_test.validation.control_flow import CONTROL_FLOW_CHECKS
from driver_under_test.validation.fixed_quantization import FIXED_OPERATIONS, check_fixed_quantization
from driver_under_test.validation.limits import Limits, check_limit, exhausted
from driver_under_test.validation.operands import (
    UINT32_MAX,
    ModelContext,
    as_int,
    as_list,
    as_uint32,
    check_operand,
    plain_operand_bytes,
)
from driver_under_test.validation.operations import SIGNATURES, check_signature, types_fit
from driver_under_test.validation.parameters import PARAMETER_POSITIONS, check_parameters
from driver_under_test.validation.same_quantization import SAME_OPERATIONS, check_same_quantization
from harness.hal import (
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
    is_extension_type,
)
from harness.hal.memory import Memory

_LT = OperandLifeTime
_WRITTEN = frozenset({_LT.TEMPORARY_VARIABLE, _LT.SUBGRAPH_OUTPUT})
_OPERATION_TYPES = frozenset(SIGNATURES) | {OperationType.OEM_OPERATION}
_OPERATION_TYPE_CLASSES = frozenset({int, OperationType})
# Plain ints: reading an enum member off its class costs more than the comparison it is used in.
_SUBGRAPH_LIFETIME = int(_LT.SUBGRAPH)
_SUBGRAPH_INPUT = int(_LT.SUBGRAPH_INPUT)
_SUBGRAPH_OUTPUT = int(_LT.SUBGRAPH_OUTPUT)
_IO_SIDES = (("input", "input_indexes", _LT.SUBGRAPH_INPUT), ("output", "output_indexes", _LT.SUBGRAPH_OUTPUT))
_NO_PREFIXES: frozenset[int] = frozenset()
# Messages name operations: looking a name up beats asking the enum for it.
_OPERATION_NAMES = {int(t): t.name for t in OperationType}
_lifetime_of = attrgetter("lifetime")
_type_of = attrgetter("type")
_consumers_of = attrgetter("number_of_consumers")
_INT_CLASS = frozenset({int})
_TYPE_CLASSES = frozenset({int, OperandType})
_NO_VALUE = int(_LT.NO_VALUE)
# Operations whose checks go on past the signature.
_CHECKED_FURTHER = (
    FIXED_OPERATIONS | SAME_OPERATIONS | BIAS_OPERATIONS | CONTROL_FLOW_CHECKS.keys() | PARAMETER_POSITIONS.keys()
)

CONSUMER_COUNT_UNCHECKED = define(
    "consumer_count_unchecked",
    "validation",
    "Never compares an operand's numberOfConsumers with the number of operation inputs that read it: a model "
    "with a wrong count is accepted (and runs normally) instead of INVALID_ARGUMENT (breaks V8).",
).name


def _name(k: int) -> str:
    return "main" if k == 0 else f"referenced[{k - 1}]"


class _OperationLabel:
    """How messages name an operation ("main operation 3 (ADD)"), spelled out only when a message is built."""

    __slots__ = ("subgraph", "index", "type")

    def __init__(self, subgraph: int, index: int) -> None:
        self.subgraph = subgraph
        self.index = index
        self.type: int | None = None  # set once the type is known to be a HAL operation

    def __str__(self) -> str:
        what = f"{_name(self.subgraph)} operation {self.index}"
        return what if self.type is None else f"{what} ({_OPERATION_NAMES[self.type]})"


def _subgraphs(model: Model, limits: Limits) -> list[Subgraph]:
    if not isinstance(model, Model):
        raise invalid("not a Model", "model.malformed")
    referenced = model.referenced
    if referenced.__class__ is not list:
        referenced = as_list(referenced, "model.referenced")
    # Compared here first: check_limit looks its limit up by name, a cost every model would pay.
    if 1 + len(referenced) > limits.max_subgraphs:
        check_limit(limits, "max_subgraphs", 1 + len(referenced), "the number of subgraphs")
    subgraphs = [model.main, *referenced]
    operands = operations = 0
    for k, sg in enumerate(subgraphs):
        if not isinstance(sg, Subgraph):
            raise invalid(f"{_name(k)} is not a Subgraph", "model.malformed")
        if (
            sg.operands.__class__ is not list
            or sg.operations.__class__ is not list
            or sg.input_indexes.__class__ is not list
            or sg.output_indexes.__class__ is not list
        ):
            for field in ("operands", "operations", "input_indexes", "output_indexes"):
                as_list(getattr(sg, field), f"{_name(k)}.{field}")
        operands += len(sg.operands)
        operations += len(sg.operations)
    if operands > limits.max_operands:
        check_limit(limits, "max_operands", operands, "the number of operands")
    if operations > limits.max_operations:
        check_limit(limits, "max_operations", operations, "the number of operations")
    return subgraphs


def _extension_prefixes(model: Model) -> frozenset[int]:
    """Declared extension prefixes; names and prefixes must map one to one."""
    entries = model.extension_name_to_prefix
    if entries.__class__ is list and not entries:
        return _NO_PREFIXES
    entries = as_list(entries, "model.extension_name_to_prefix")
    names: set[str] = set()
    prefixes: set[int] = set()
    for entry in entries:
        name, prefix = getattr(entry, "name", None), getattr(entry, "prefix", None)
        if not isinstance(name, str) or not name:
            raise invalid(f"extension entry {entry!r} has no name", "V2.extension_prefix")
        p = as_int(prefix, f"prefix of extension {name}")
        if not 0 < p <= 0xFFFF:
            raise invalid(f"extension {name} has prefix {p}, outside 1..65535", "V2.extension_prefix")
        if name in names or p in prefixes:
            raise invalid(f"extension {name} / prefix {p} is declared twice", "V2.extension_prefix")
        names.add(name)
        prefixes.add(p)
    return frozenset(prefixes)


def _context(model: Model, prefixes: frozenset[int], limits: Limits, faults: FaultSet) -> ModelContext:
    values = model.operand_values
    if values.__class__ is not bytes and not isinstance(values, bytes | bytearray | memoryview):
        raise invalid("model.operand_values must be bytes", "model.malformed")
    pools = model.pools
    if pools.__class__ is not list:
        pools = as_list(pools, "model.pools")
    sizes = []
    for k, pool in enumerate(pools):
        if not isinstance(pool, Memory):
            raise invalid(f"model pool {k} is not a shared memory", "V23.constant_pool")
        sizes.append(pool.size)
    element_bound = min(limits.max_elements_per_operand, UINT32_MAX)
    return ModelContext(
        len(values), sizes, len(model.referenced), prefixes, limits, faults, limits.max_rank, element_bound
    )


def _check_operands(subgraphs: Sequence[Subgraph], ctx: ModelContext) -> list[bool]:
    """Every operand, in order; per subgraph, whether all its operands were plain (int or OperandType types)."""
    total = 0
    limit = ctx.limits.max_total_constant_bytes
    plain = []
    for k, sg in enumerate(subgraphs):
        all_plain = True
        for i, operand in enumerate(sg.operands):
            size = plain_operand_bytes(operand, ctx)
            if size is None:
                size = check_operand(operand, f"{_name(k)} operand {i}", ctx)
                all_plain = False
            total += size
            if total > limit:
                raise exhausted("max_total_constant_bytes", f"the model's constants exceed {limit} bytes")
        plain.append(all_plain)
    return plain


def _io_lists_hold(sg: Subgraph, lifetimes: list[object]) -> bool:
    """True when _check_io_lists finds nothing, decided without building a message (False leaves it to it)."""
    n = len(lifetimes)
    inputs, outputs = sg.input_indexes, sg.output_indexes
    for i in inputs:
        if i.__class__ is not int or not 0 <= i < n or lifetimes[i] != _SUBGRAPH_INPUT:
            return False
    for i in outputs:
        if i.__class__ is not int or not 0 <= i < n or lifetimes[i] != _SUBGRAPH_OUTPUT:
            return False
    # No index twice, and none of the lifetime left out.
    return (
        len(set(inputs)) == len(inputs) == lifetimes.count(_SUBGRAPH_INPUT)
        and len(set(outputs)) == len(outputs) == lifetimes.count(_SUBGRAPH_OUTPUT)
        and len(outputs) > 0
    )


def _check_io_lists(sg: Subgraph, k: int, lifetimes: list[object]) -> None:
    """V7: inputIndexes/outputIndexes name exactly the SUBGRAPH_INPUT/SUBGRAPH_OUTPUT operands, once each.

    `lifetimes` are those of the subgraph's operands, in order; the subgraph is named only in messages.
    """
    n = len(lifetimes)
    for side, field, lifetime in _IO_SIDES:
        indexes = getattr(sg, field)
        seen: set[int] = set()
        for position, value in enumerate(indexes):
            i = value if value.__class__ is int else as_int(value, f"{_name(k)} {side} index {position}")
            if not 0 <= i < n:
                raise invalid(f"{_name(k)} {side} index {position} is {i}; the subgraph has {n} operands",
                              "V7.io_index_range")  # fmt: skip
            if i in seen:
                raise invalid(f"{_name(k)} lists operand {i} twice as a subgraph {side}", "V7.io_index_duplicate")
            seen.add(i)
            if lifetimes[i] != lifetime:
                raise invalid(
                    f"{_name(k)} {side} operand {i} has lifetime {_LT(lifetimes[i]).name}, not {lifetime.name}",
                    "V7.lifetime_vs_io_lists",
                )
        # Every listed operand has the lifetime: as many operands with it as listed means none is left out.
        if lifetimes.count(lifetime) == len(seen):
            continue
        for i, operand_lifetime in enumerate(lifetimes):
            if operand_lifetime == lifetime and i not in seen:
                raise invalid(f"{_name(k)} operand {i} is {lifetime.name} but not a subgraph {side}",
                              "V7.lifetime_vs_io_lists")  # fmt: skip
    if not sg.output_indexes:
        raise invalid(f"{_name(k)} has no outputs", "V7.no_outputs")


def _check_references(subgraphs: Sequence[Subgraph], lifetimes: list[list[object]]) -> None:
    """V25: subgraph references form no cycle and every referenced subgraph is reachable from main.

    `lifetimes` are those of each subgraph's operands.
    """
    if len(subgraphs) == 1:
        # The operand checks leave no subgraph reference in a model without referenced subgraphs.
        return
    edges = [
        sorted({op.location.offset + 1 for op in sg.operands if op.lifetime == _SUBGRAPH_LIFETIME})
        if _SUBGRAPH_LIFETIME in subgraph_lifetimes
        else []
        for sg, subgraph_lifetimes in zip(subgraphs, lifetimes)
    ]
    state = [0] * len(subgraphs)  # 0 unvisited, 1 on the current path, 2 done
    for root in range(len(subgraphs)):
        if state[root]:
            continue
        stack = [(root, iter(edges[root]))]
        state[root] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state[child] == 1:
                raise invalid(f"{_name(node)} references {_name(child)}, closing a cycle", "V25.reference_cycle")
            elif state[child] == 0:
                state[child] = 1
                stack.append((child, iter(edges[child])))
    reachable, todo = {0}, [0]
    while todo:
        for child in edges[todo.pop()]:
            if child not in reachable:
                reachable.add(child)
                todo.append(child)
    for k in range(1, len(subgraphs)):
        if k not in reachable:
            raise invalid(f"{_name(k)} is not referenced from the main subgraph", "V25.unreferenced_subgraph")


def _operation_type(value: object, prefixes: frozenset[int], what: object) -> int:
    if value.__class__ in _OPERATION_TYPE_CLASSES and value in _OPERATION_TYPES:
        return value  # type: ignore[return-value]
    t = as_int(value, f"{what} type")
    if t in _OPERATION_TYPES:
        return t
    if is_extension_type(t) and t <= UINT32_MAX and (t >> 16) in prefixes:
        return t
    raise invalid(f"{what} has type {t}, which is not an operation type", "V11.operation_type")


def _indexes_in_range(indexes: object, n: int) -> bool:
    """True for a list of plain ints that are all operand indexes (what the checks of V12/V13 accept)."""
    if indexes.__class__ is not list:
        return False
    for i in indexes:  # type: ignore[attr-defined]
        if i.__class__ is not int or not 0 <= i < n:
            return False
    return True


def _check_operations(
    model: Model,
    subgraphs: Sequence[Subgraph],
    prefixes: frozenset[int],
    lifetimes: list[list[object]],
    plain: list[bool],
    faults: FaultSet,
) -> None:
    """Every operation, in order; `lifetimes` and `plain` (all operands plain) are per subgraph."""
    for k, sg in enumerate(subgraphs):
        operands = sg.operands
        n = len(operands)
        types = list(map(_type_of, operands))
        if not plain[k] and not _TYPE_CLASSES.issuperset(map(type, types)):
            types = None  # types_fit takes ints only: every operation takes the complete path
        valued = [lifetime != _NO_VALUE for lifetime in lifetimes[k]] if _NO_VALUE in lifetimes[k] else None
        for j, op in enumerate(sg.operations):
            t = None if types is None else _plain_signature(op, n, types, valued)
            if t is None:
                _check_operation(model, k, sg, j, op, prefixes, faults)
            elif t in _CHECKED_FURTHER:
                what = _OperationLabel(k, j)
                what.type = t
                _check_beyond_signature(model, sg, op, t, what, [operands[i] for i in op.outputs], faults)


def _plain_signature(op: object, n: int, types: list[object], valued: list[bool] | None) -> int | None:
    """The type of an operation that passes every check up to its signature, decided without building a message.

    `types` are those of the subgraph's n operands, `valued` whether each has a value (None: all of them). Only
    operations of a SIGNATURES type are judged; None leaves the decision (and the message) to _check_operation.
    """
    if op.__class__ is not Operation:
        return None
    t = op.type  # type: ignore[attr-defined]
    if t.__class__ not in _OPERATION_TYPE_CLASSES or t not in SIGNATURES:
        return None
    inputs, outputs = op.inputs, op.outputs  # type: ignore[attr-defined]
    if inputs.__class__ is not list or outputs.__class__ is not list:
        return None
    indexes = inputs + outputs
    for i in indexes:
        if i.__class__ is not int or not 0 <= i < n:
            return None
    type_of = types.__getitem__
    input_types = tuple(map(type_of, inputs))
    output_types = tuple(map(type_of, outputs))
    if valued is None:
        holds = types_fit(t, input_types, output_types)
    else:
        holds = types_fit(t, input_types, output_types, tuple(map(valued.__getitem__, indexes)))
    return t if holds else None  # type: ignore[no-any-return]


def _check_operation(
    model: Model, k: int, sg: Subgraph, j: int, op: Operation, prefixes: frozenset[int], faults: FaultSet
) -> None:
    """Every check of operation j of subgraph k, in order; raises for the first problem."""
    operands = sg.operands
    n = len(operands)
    what = _OperationLabel(k, j)
    if op.__class__ is not Operation and (not hasattr(op, "inputs") or not hasattr(op, "outputs")):
        raise invalid(f"{what} is not an Operation", "model.malformed")
    t = _operation_type(op.type, prefixes, what)
    if t in SIGNATURES:
        what.type = t
    inputs, outputs = op.inputs, op.outputs
    if not (_indexes_in_range(inputs, n) and _indexes_in_range(outputs, n)):
        for side, indexes, rule in (("input", inputs, "V12.input_index"), ("output", outputs, "V13.output_index")):
            if indexes.__class__ is not list:
                indexes = as_list(indexes, f"{what} {side}s")
            for position, value in enumerate(indexes):
                if value.__class__ is int and 0 <= value < n:
                    continue  # what as_uint32 and the range accept, without naming the position
                i = as_uint32(value, f"{what} {side} {position}", rule)
                if i >= n:
                    raise invalid(f"{what} {side} {position} is operand {i}; the subgraph has {n}", rule)
    output_operands = [operands[i] for i in outputs]
    check_signature(t, [operands[i] for i in inputs], output_operands, what)
    _check_beyond_signature(model, sg, op, t, what, output_operands, faults)


def _check_beyond_signature(
    model: Model,
    sg: Subgraph,
    op: Operation,
    t: int,
    what: _OperationLabel,
    output_operands: list[Operand],
    faults: FaultSet,
) -> None:
    """The checks that follow the signature: fixed, kept and bias quantization, parameter values, then IF/WHILE
    against their subgraphs."""
    input_operands = [sg.operands[i] for i in op.inputs]
    check_fixed_quantization(t, input_operands, output_operands, what, faults)
    check_same_quantization(t, input_operands, output_operands, what, faults)
    if t in BIAS_OPERATIONS:
        check_bias_quantization(t, input_operands, what, faults)
    if t in PARAMETER_POSITIONS:
        check_parameters(model, t, input_operands, what)
    if t in CONTROL_FLOW_CHECKS:
        CONTROL_FLOW_CHECKS[t](model, sg, op, what)


def _dataflow_holds(sg: Subgraph, writes: list[bool], consumers_checked: bool) -> bool:
    """True when _check_dataflow finds nothing, decided in one pass and without building a message.

    `writes[i]` tells whether operand i may be written (TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT). False leaves the
    decision (and the message) to _check_dataflow.
    """
    n = len(writes)
    written = [False] * n
    consumers = [0] * n
    for op in sg.operations:
        for i in op.inputs:
            if writes[i] and not written[i]:
                return False
            consumers[i] += 1
        for i in op.outputs:
            if written[i] or not writes[i]:
                return False
            written[i] = True
    if written != writes:
        return False
    if consumers_checked:
        declared = list(map(_consumers_of, sg.operands))
        if not _INT_CLASS.issuperset(map(type, declared)) or declared != consumers:
            return False
    return True


def _check_dataflow(sg: Subgraph, what: str, faults: FaultSet) -> None:
    """V6/V9 writers, V1 execution order, V14 unwritten operands, V8 consumer counts."""
    operands = sg.operands
    writes = [operand.lifetime in _WRITTEN for operand in operands]
    writer = [-1] * len(operands)
    for j, op in enumerate(sg.operations):
        for i in op.outputs:
            if not writes[i]:
                lifetime = operands[i].lifetime
                raise invalid(
                    f"{what} operation {j} writes operand {i} whose lifetime is {_LT(lifetime).name}",
                    "V6.lifetime_vs_writer",
                )
            if writer[i] != -1:
                raise invalid(f"{what} operand {i} is written by operations {writer[i]} and {j}", "V9.written_twice")
            writer[i] = j
    written = [False] * len(operands)
    for j, op in enumerate(sg.operations):
        for i in op.inputs:
            if writes[i] and not written[i]:
                if writer[i] == -1:
                    raise invalid(f"{what} operation {j} reads operand {i}, which nothing writes", "V14.never_written")
                raise invalid(
                    f"{what} operation {j} reads operand {i} before operation {writer[i]} writes it",
                    "V1.read_before_write",
                )
        for i in op.outputs:
            written[i] = True
    for i, operand in enumerate(operands):
        if writes[i] and writer[i] == -1:
            raise invalid(f"{what} operand {i} ({_LT(operand.lifetime).name}) is never written", "V14.never_written")
    if faults.active(CONSUMER_COUNT_UNCHECKED):
        return
    consumers = [0] * len(operands)
    for op in sg.operations:
        for i in op.inputs:
            consumers[i] += 1
    for i, operand in enumerate(operands):
        declared = operand.number_of_consumers
        if declared.__class__ is not int:
            declared = as_int(declared, f"{what} operand {i} numberOfConsumers")
        if declared != consumers[i]:
            raise invalid(
                f"{what} operand {i} declares {declared} consumers but {consumers[i]} operation inputs read it",
                "V8.number_of_consumers",
            )


def _validate(model: Model, limits: Limits, faults: FaultSet) -> None:
    subgraphs = _subgraphs(model, limits)
    prefixes = _extension_prefixes(model)
    plain = _check_operands(subgraphs, _context(model, prefixes, limits, faults))
    # The operands are valid from here on: each subgraph's lifetimes, read once for the checks that follow.
    lifetimes = [list(map(_lifetime_of, sg.operands)) for sg in subgraphs]
    for k, sg in enumerate(subgraphs):
        if not _io_lists_hold(sg, lifetimes[k]):
            _check_io_lists(sg, k, lifetimes[k])
    _check_references(subgraphs, lifetimes)
    _check_operations(model, subgraphs, prefixes, lifetimes, plain, faults)
    consumers_checked = not faults.active(CONSUMER_COUNT_UNCHECKED)
    for k, sg in enumerate(subgraphs):
        if not _dataflow_holds(sg, list(map(_WRITTEN.__contains__, lifetimes[k])), consumers_checked):
            _check_dataflow(sg, _name(k), faults)


def validate_model(model: Model, limits: Limits, faults: FaultSet | None = None) -> None:
    """Raise DriverError (INVALID_ARGUMENT, or RESOURCE_EXHAUSTED_PERSISTENT past a limit) for the first problem.

    `faults` are the device's planted faults (none by default).
    """
    try:
        _validate(model, limits, faults if faults is not None else FaultSet())
    except DriverError:
        raise
    except (AttributeError, TypeError, ValueError, IndexError, KeyError, OverflowError, RecursionError) as e:
        # A structure too malformed for the checks above (a wrong object where a field belongs): still a
        # clear INVALID_ARGUMENT rather than an exception escaping the HAL interface.
        raise invalid(f"malformed model: {e!r}", "model.malformed") from e
