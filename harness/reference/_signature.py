"""Signature conformance: does some catalogued signature of an operation accept its operands?

A signature accepts an operation when the input count lies between its required inputs and all of its inputs (a
`repeated` Arg absorbing one or more inputs), every present input has a type the Arg lists (NO_VALUE only at
optional positions, constants at constant-only positions, ranks within the Arg's limits), the outputs match the same
way, and the signature's own `check` finds nothing. When none accepts, the closest attempt names the mismatch.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from harness.hal import Model, Operand, OperandLifeTime, Operation, Subgraph, has_unknown_dimensions, is_scalar_type
from harness.hal.sizes import numpy_dtype, operand_byte_size
from harness.ops import Arg, OpSpec, ShapeContext, Signature
from harness.reference._names import lifetime_name, operation_name, type_name
from harness.reference._rules import Violation, violation

L = OperandLifeTime
# Values fixed when the model is prepared; a SUBGRAPH reference is as constant as a CONSTANT_COPY.
_CONSTANT = frozenset({L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.SUBGRAPH})


@dataclass
class _Attempt:
    """How one signature fared: the problems found (none = accepted) and how far from fitting it is."""

    signature: Signature
    problems: list[str]
    v: str
    count_mismatch: bool = False
    from_check: bool = False

    @property
    def distance(self) -> tuple[int, int]:
        # A failed check (types fit) is closer than a type mismatch, which is closer than a wrong operand count.
        tier = 2 if self.count_mismatch else 0 if self.from_check else 1
        return (tier, len(self.problems))


def check_signature(
    model: Model, subgraph: Subgraph, operation: Operation, spec: OpSpec, label: str
) -> list[Violation]:
    """One violation when no signature of `spec` accepts the operation (all indexes already known valid)."""
    # Valid operations are the rule: find an accepting signature without writing up the mismatches of the others,
    # which only a rejection reports.
    if any(_accepts(model, subgraph, operation, signature) for signature in spec.signatures):
        return []
    attempts = [_attempt(model, subgraph, operation, signature) for signature in spec.signatures]
    if not attempts or any(not a.problems for a in attempts):
        return []
    best = min(attempts, key=lambda a: a.distance)
    name = operation_name(operation.type)
    detail = "; ".join(best.problems)
    if best.from_check:
        return [
            violation(
                "model.operation.constraint", f"{label} ({name}): {describe(best.signature)} rejects it: {detail}"
            )
        ]
    return [
        violation(
            "model.operation.signature",
            f"{label} ({name}): no signature accepts it; closest {describe(best.signature)}: {detail}",
            v=best.v,
        )
    ]


def describe(signature: Signature) -> str:
    """A compact rendering of a signature: (input types...) -> (output types...)."""

    def arg(a: Arg) -> str:
        types = "|".join(type_name(t) for t in a.types) if len(a.types) <= 3 else f"{len(a.types)} types"
        return f"{a.name}:{types}{'?' if a.optional else ''}{'...' if a.repeated else ''}"

    return f"({', '.join(arg(a) for a in signature.inputs)}) -> ({', '.join(arg(a) for a in signature.outputs)})"


def _attempt(model: Model, subgraph: Subgraph, operation: Operation, signature: Signature) -> _Attempt:
    n_in, n_out = len(operation.inputs), len(operation.outputs)
    input_plans = list(_assignments(signature.inputs, signature.required_inputs, n_in))
    if not input_plans:
        lo, hi = _count_range(signature.inputs, signature.required_inputs)
        return _Attempt(
            signature, [f"takes {_range_text(lo, hi)} inputs, got {n_in}"], "V17" if n_in < lo else "V19", True
        )
    output_plans = list(_assignments(signature.outputs, len(signature.outputs), n_out))
    if not output_plans:
        lo, hi = _count_range(signature.outputs, len(signature.outputs))
        return _Attempt(
            signature, [f"gives {_range_text(lo, hi)} outputs, got {n_out}"], "V18" if n_out < lo else "V20", True
        )
    operands = subgraph.operands
    best: list[str] | None = None
    for in_plan, out_plan in itertools.product(input_plans, output_plans):
        problems = [
            f"input {j} (operand {k}): {p}"
            for j, (k, arg) in enumerate(zip(operation.inputs, in_plan))
            for p in _position_problems(operands[k], arg, is_input=True)
        ]
        problems += [
            f"output {j} (operand {k}): {p}"
            for j, (k, arg) in enumerate(zip(operation.outputs, out_plan))
            for p in _position_problems(operands[k], arg, is_input=False)
        ]
        if not problems:
            break
        if best is None or len(problems) < len(best):
            best = problems
    else:
        assert best is not None
        return _Attempt(signature, best, "V10")
    if signature.check is None:
        return _Attempt(signature, [], "V10")
    messages = list(signature.check(shape_context(model, subgraph, operation)))
    return _Attempt(signature, messages, "V10", from_check=bool(messages))


def _accepts(model: Model, subgraph: Subgraph, operation: Operation, signature: Signature) -> bool:
    """True when `_attempt` would find no problem: some layout fits every position and the check finds nothing."""
    operands = subgraph.operands
    # Every layout puts the first operand at the first Arg: most signatures of a catalogued operation differ in
    # the tensor type, and this rejects them at once.
    for indexes, args in ((operation.inputs, signature.inputs), (operation.outputs, signature.outputs)):
        if indexes and args and int(operands[indexes[0]].type) not in args[0].types:
            return False
    output_plans = list(_assignments(signature.outputs, len(signature.outputs), len(operation.outputs)))
    for in_plan in _assignments(signature.inputs, signature.required_inputs, len(operation.inputs)):
        if not all(_position_fits(operands[k], arg, is_input=True) for k, arg in zip(operation.inputs, in_plan)):
            continue
        for out_plan in output_plans:
            if all(_position_fits(operands[k], arg, is_input=False) for k, arg in zip(operation.outputs, out_plan)):
                # _attempt runs the check once, after the first layout that fits; it does not depend on the layout.
                return signature.check is None or not list(signature.check(shape_context(model, subgraph, operation)))
    return False


def _count_range(args: Sequence[Arg], required: int) -> tuple[int, float]:
    hi = math.inf if any(a.repeated for a in args) else len(args)
    return required, hi


def _range_text(lo: int, hi: float) -> str:
    if hi == math.inf:
        return f"at least {lo}"
    return str(lo) if lo == hi else f"{lo} to {int(hi)}"


def _assignments(args: Sequence[Arg], required: int, count: int) -> Iterator[tuple[Arg, ...]]:
    """Every way of laying `count` operands over a prefix of `args` (at least `required` long)."""
    for used in range(required, len(args) + 1):
        prefix = args[:used]
        repeated = [i for i, a in enumerate(prefix) if a.repeated]
        extra = count - used  # operands beyond one per Arg, to be absorbed by repeated Args
        if extra < 0 or (extra > 0 and not repeated):
            continue
        if not repeated:
            yield tuple(prefix)
            continue
        # Distribute `extra` among the repeated Args (usually just one).
        for split in _compositions(extra, len(repeated)):
            extra_of = dict(zip(repeated, split))
            yield tuple(a for i, a in enumerate(prefix) for _ in range(1 + extra_of.get(i, 0)))


def _compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def _position_problems(operand: Operand, arg: Arg, *, is_input: bool) -> list[str]:
    problems = []
    lifetime = int(operand.lifetime)
    if lifetime == L.NO_VALUE and not (is_input and arg.optional):
        problems.append(f"omitted (NO_VALUE) but {arg.name} is required")
    if int(operand.type) not in arg.types:
        expected = ", ".join(type_name(t) for t in arg.types)
        problems.append(f"type {type_name(operand.type)} not accepted for {arg.name} (expects {expected})")
    if is_input and arg.constant and lifetime not in _CONSTANT and lifetime != L.NO_VALUE:
        problems.append(f"{arg.name} must be a constant, got lifetime {lifetime_name(lifetime)}")
    # An optional position fed by a model input may get no value at execution (hasNoValue), so the shape that
    # input declares (often [0]) need not fit.
    may_be_absent = is_input and arg.optional and lifetime == L.SUBGRAPH_INPUT
    if arg.rank is not None and not is_scalar_type(operand.type) and operand.dimensions and not may_be_absent:
        lo, hi = arg.rank
        if not lo <= len(operand.dimensions) <= hi:
            problems.append(f"rank {len(operand.dimensions)} outside [{lo}, {hi}] for {arg.name}")
    return problems


def _position_fits(operand: Operand, arg: Arg, *, is_input: bool) -> bool:
    """not _position_problems(operand, arg, is_input=is_input), without the messages."""
    lifetime = int(operand.lifetime)
    if lifetime == L.NO_VALUE and not (is_input and arg.optional):
        return False
    if int(operand.type) not in arg.types:
        return False
    if is_input and arg.constant and lifetime not in _CONSTANT and lifetime != L.NO_VALUE:
        return False
    may_be_absent = is_input and arg.optional and lifetime == L.SUBGRAPH_INPUT
    if arg.rank is not None and not is_scalar_type(operand.type) and operand.dimensions and not may_be_absent:
        lo, hi = arg.rank
        return lo <= len(operand.dimensions) <= hi
    return True


def shape_context(model: Model, subgraph: Subgraph, operation: Operation) -> ShapeContext:
    """What a signature check sees for this operation (NO_VALUE inputs become None)."""
    operands: list[Operand | None] = []
    shapes: list[tuple[int, ...] | None] = []
    values: list[np.ndarray | None] = []
    for k in operation.inputs:
        operand = subgraph.operands[k]
        if int(operand.lifetime) == L.NO_VALUE:
            operands.append(None)
            shapes.append(None)
            values.append(None)
            continue
        operands.append(operand)
        shapes.append(operand_shape(operand))
        values.append(constant_value(model, operand))
    outputs = [subgraph.operands[k] for k in operation.outputs]
    return ShapeContext(operands=operands, shapes=shapes, values=values, outputs=outputs)


def operand_shape(operand: Operand) -> tuple[int, ...] | None:
    """() for scalars, the dimensions for tensors of known rank, None for unknown rank."""
    if is_scalar_type(operand.type):
        return ()
    return tuple(operand.dimensions) if operand.dimensions else None


def constant_value(model: Model, operand: Operand) -> np.ndarray | None:
    """The stored value of a well-formed CONSTANT_COPY operand; None otherwise (pool contents are not read)."""
    if int(operand.lifetime) != L.CONSTANT_COPY:
        return None
    try:
        dtype = numpy_dtype(operand.type)
        size = operand_byte_size(operand.type, operand.dimensions)
    except ValueError:
        return None
    loc = operand.location
    if is_scalar_type(operand.type):
        shape: tuple[int, ...] = ()
    elif has_unknown_dimensions(operand.dimensions):
        return None
    else:
        shape = tuple(operand.dimensions)
    if loc.length != size or loc.offset < 0 or loc.offset + size > len(model.operand_values):
        return None
    count = size // dtype.itemsize
    return np.frombuffer(model.operand_values, dtype=dtype, count=count, offset=loc.offset).reshape(shape)
