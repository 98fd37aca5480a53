"""Validation of a whole model: its operands, subgraph interfaces, references, operations and data flow.

Checks run in a fixed order so that one model always fails with the same rule: limits, extension prefixes,
every operand of every subgraph, each subgraph's input/output lists, subgraph references, every operation
(type, operand indexes, signature, control flow), then data flow (writers, execution order, consumers).
"""

from __future__ import annotations

from collections.abc import Sequence

from driver_under_test.errors import DriverError, invalid
from driver_under_test.faults import FaultSet, define
from driver_under_test.validation.control_flow import CONTROL_FLOW_CHECKS
from driver_under_test.validation.fixed_quantization import check_fixed_output_quantization
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
from driver_under_test.validation.operations import SIGNATURES, check_signature
from harness.hal import Model, OperandLifeTime, Operation, OperationType, Subgraph, is_extension_type
from harness.hal.memory import Memory

_LT = OperandLifeTime
_WRITTEN = frozenset({_LT.TEMPORARY_VARIABLE, _LT.SUBGRAPH_OUTPUT})
_OPERATION_TYPES = frozenset(SIGNATURES) | {OperationType.OEM_OPERATION}
_OPERATION_TYPE_CLASSES = frozenset({int, OperationType})

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
        return what if self.type is None else f"{what} ({OperationType(self.type).name})"


def _subgraphs(model: Model, limits: Limits) -> list[Subgraph]:
    if not isinstance(model, Model):
        raise invalid("not a Model", "model.malformed")
    referenced = as_list(model.referenced, "model.referenced")
    check_limit(limits, "max_subgraphs", 1 + len(referenced), "the number of subgraphs")
    subgraphs = [model.main, *referenced]
    for k, sg in enumerate(subgraphs):
        if not isinstance(sg, Subgraph):
            raise invalid(f"{_name(k)} is not a Subgraph", "model.malformed")
        for field in ("operands", "operations", "input_indexes", "output_indexes"):
            value = getattr(sg, field)
            if value.__class__ is not list:
                as_list(value, f"{_name(k)}.{field}")
    check_limit(limits, "max_operands", sum(len(sg.operands) for sg in subgraphs), "the number of operands")
    check_limit(limits, "max_operations", sum(len(sg.operations) for sg in subgraphs), "the number of operations")
    return subgraphs


def _extension_prefixes(model: Model) -> frozenset[int]:
    """Declared extension prefixes; names and prefixes must map one to one."""
    entries = as_list(model.extension_name_to_prefix, "model.extension_name_to_prefix")
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
    if not isinstance(model.operand_values, bytes | bytearray | memoryview):
        raise invalid("model.operand_values must be bytes", "model.malformed")
    pools = as_list(model.pools, "model.pools")
    sizes = []
    for k, pool in enumerate(pools):
        if not isinstance(pool, Memory):
            raise invalid(f"model pool {k} is not a shared memory", "V23.constant_pool")
        sizes.append(pool.size)
    return ModelContext(len(model.operand_values), sizes, len(model.referenced), prefixes, limits, faults)


def _check_operands(subgraphs: Sequence[Subgraph], ctx: ModelContext) -> None:
    total = 0
    for k, sg in enumerate(subgraphs):
        for i, operand in enumerate(sg.operands):
            size = plain_operand_bytes(operand, ctx)
            if size is None:
                size = check_operand(operand, f"{_name(k)} operand {i}", ctx)
            total += size
            if total > ctx.limits.max_total_constant_bytes:
                raise exhausted(
                    "max_total_constant_bytes",
                    f"the model's constants exceed {ctx.limits.max_total_constant_bytes} bytes",
                )


def _check_io_lists(sg: Subgraph, what: str) -> None:
    """V7: inputIndexes/outputIndexes name exactly the SUBGRAPH_INPUT/SUBGRAPH_OUTPUT operands, once each."""
    n = len(sg.operands)
    lifetimes = [operand.lifetime for operand in sg.operands]
    for side, indexes, lifetime in (
        ("input", sg.input_indexes, _LT.SUBGRAPH_INPUT),
        ("output", sg.output_indexes, _LT.SUBGRAPH_OUTPUT),
    ):
        seen: set[int] = set()
        for position, value in enumerate(indexes):
            i = value if value.__class__ is int else as_int(value, f"{what} {side} index {position}")
            if not 0 <= i < n:
                raise invalid(f"{what} {side} index {position} is {i}; the subgraph has {n} operands",
                              "V7.io_index_range")  # fmt: skip
            if i in seen:
                raise invalid(f"{what} lists operand {i} twice as a subgraph {side}", "V7.io_index_duplicate")
            seen.add(i)
            if lifetimes[i] != lifetime:
                raise invalid(
                    f"{what} {side} operand {i} has lifetime {_LT(sg.operands[i].lifetime).name}, not {lifetime.name}",
                    "V7.lifetime_vs_io_lists",
                )
        # Every listed operand has the lifetime: as many operands with it as listed means none is left out.
        if lifetimes.count(lifetime) == len(seen):
            continue
        for i, operand in enumerate(sg.operands):
            if operand.lifetime == lifetime and i not in seen:
                raise invalid(f"{what} operand {i} is {lifetime.name} but not a subgraph {side}",
                              "V7.lifetime_vs_io_lists")  # fmt: skip
    if not sg.output_indexes:
        raise invalid(f"{what} has no outputs", "V7.no_outputs")


def _check_references(subgraphs: Sequence[Subgraph]) -> None:
    """V25: subgraph references form no cycle and every referenced subgraph is reachable from main."""
    edges = [
        sorted({op.location.offset + 1 for op in sg.operands if op.lifetime == _LT.SUBGRAPH}) for sg in subgraphs
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


def _check_operations(model: Model, subgraphs: Sequence[Subgraph], prefixes: frozenset[int]) -> None:
    for k, sg in enumerate(subgraphs):
        operands = sg.operands
        n = len(operands)
        for j, op in enumerate(sg.operations):
            what = _OperationLabel(k, j)
            if op.__class__ is not Operation and (not hasattr(op, "inputs") or not hasattr(op, "outputs")):
                raise invalid(f"{what} is not an Operation", "model.malformed")
            t = _operation_type(op.type, prefixes, what)
            if t in SIGNATURES:
                what.type = t
            inputs, outputs = op.inputs, op.outputs
            if not (_indexes_in_range(inputs, n) and _indexes_in_range(outputs, n)):
                for side, indexes, rule in (("input", inputs, "V12.input_index"), ("output", outputs,
                                                                                  "V13.output_index")):
                    for position, value in enumerate(as_list(indexes, f"{what} {side}s")):
                        i = as_uint32(value, f"{what} {side} {position}", rule)
                        if i >= n:
                            raise invalid(f"{what} {side} {position} is operand {i}; the subgraph has {n}", rule)
            output_operands = [operands[i] for i in outputs]
            check_signature(t, [operands[i] for i in inputs], output_operands, what)
            check_fixed_output_quantization(t, output_operands, what)
            if t in CONTROL_FLOW_CHECKS:
                CONTROL_FLOW_CHECKS[t](model, sg, op, str(what))


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
    _check_operands(subgraphs, _context(model, prefixes, limits, faults))
    for k, sg in enumerate(subgraphs):
        _check_io_lists(sg, _name(k))
    _check_references(subgraphs)
    _check_operations(model, subgraphs, prefixes)
    for k, sg in enumerate(subgraphs):
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
