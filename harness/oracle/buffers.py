"""The memory-domain rules (REQUIREMENTS D15-D18) and the oracle's model of one driver-managed buffer.

A BufferModel follows one buffer through its life cycle: uninitialized (never written, or after a failed copyFrom
or execution, D17), initialized with a known Content (its dimensions and values: bit-exact after a copyFrom, the
reference's after an execution), or either of the two where the HAL leaves it open (a request refused with
INVALID_ARGUMENT may or may not count as a failed execution); a read settles that. Each judging function takes
what the driver answered to one allocate, copy or execution, returns the Breach of the rule it broke (or None)
and moves the model to the buffer's new state.

| rule id | in short |
|---|---|
| memory_domain.allocate_validates_roles | roles breaking D15: INVALID_ARGUMENT (GENERAL_FAILURE if dynamic size) |
| memory_domain.allocate_accepts_valid_roles | valid roles: NONE, a buffer and a token > 0; or GENERAL_FAILURE |
| memory_domain.uninitialized_read_fails | reading a buffer never initialized is GENERAL_FAILURE |
| memory_domain.failed_execution_uninitializes | after a failed execution writing it, reading it is GENERAL_FAILURE |
| memory_domain.failed_copy_uninitializes | after a failed copyFrom, reading it is GENERAL_FAILURE |
| memory_domain.copy_round_trips | a valid copyFrom succeeds; copyTo gives back exactly the bytes written |
| memory_domain.copy_validates_memory | copies with a memory of the wrong size or bad dimensions: INVALID_ARGUMENT |
| memory_domain.illegal_use_rejected | an execution using the buffer against D16: INVALID_ARGUMENT, no shapes |
| memory_domain.values_match_reference | executions reading or writing the buffer produce the reference's values |
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from harness.hal import (
    ErrorStatus,
    Model,
    OutputShape,
    element_size,
    has_unknown_dimensions,
    is_scalar_type,
    merge_dimensions,
)
from harness.oracle.accuracy import compare
from harness.oracle.exactness import exact_outputs
from harness.oracle.outputs import output_producer, quantized_operations, unspecified_outputs
from harness.oracle.rules import (
    _DATA_FAILURES,
    MISSED_DEADLINE,
    STATUS_EXPECTED,
    Breach,
    Expectation,
    judge_execution,
    judge_notes,
    judge_outputs,
    judge_timing,
)
from harness.oracle.verdict import define_rule
from harness.reference import ReferenceResult, judge_output_sizes

__all__ = [
    "ALLOCATE_ACCEPTS_VALID_ROLES",
    "ALLOCATE_VALIDATES_ROLES",
    "COPY_ROUND_TRIPS",
    "COPY_VALIDATES_MEMORY",
    "FAILED_COPY",
    "FAILED_COPY_UNINITIALIZES",
    "FAILED_EXECUTION",
    "FAILED_EXECUTION_UNINITIALIZES",
    "ILLEGAL_USE_REJECTED",
    "INITIALIZED",
    "NEVER_WRITTEN",
    "UNINITIALIZED",
    "UNINITIALIZED_READ_FAILS",
    "UNSURE",
    "VALUES_MATCH_REFERENCE",
    "BufferModel",
    "Content",
    "LegalUse",
    "copy_to_statuses",
    "illegal_uses",
    "judge_allocation",
    "judge_copy_from",
    "judge_copy_to",
    "judge_illegal_use",
    "judge_legal_use",
    "judge_uninitialized_read",
]

# --- Rules ----------------------------------------------------------------------------------------------------------

ALLOCATE_VALIDATES_ROLES = define_rule(
    "memory_domain.allocate_validates_roles",
    "allocate with roles or a descriptor that break D15 answers INVALID_ARGUMENT (GENERAL_FAILURE when the size "
    "is dynamic) with no buffer and token 0",
)
ALLOCATE_ACCEPTS_VALID_ROLES = define_rule(
    "memory_domain.allocate_accepts_valid_roles",
    "allocate with valid roles answers NONE with a buffer and a token > 0, or GENERAL_FAILURE (unsupported) with "
    "no buffer and token 0",
)
UNINITIALIZED_READ_FAILS = define_rule(
    "memory_domain.uninitialized_read_fails",
    "reading a buffer never initialized, as an execution input or with copyTo, is GENERAL_FAILURE",
)
FAILED_EXECUTION_UNINITIALIZES = define_rule(
    "memory_domain.failed_execution_uninitializes",
    "an execution that fails after accepting the buffer as an output leaves it uninitialized: reading it is "
    "GENERAL_FAILURE",
)
FAILED_COPY_UNINITIALIZES = define_rule(
    "memory_domain.failed_copy_uninitializes",
    "a failed copyFrom leaves the buffer uninitialized: reading it is GENERAL_FAILURE",
)
COPY_ROUND_TRIPS = define_rule(
    "memory_domain.copy_round_trips",
    "copyFrom of a right-size memory with agreeing dimensions succeeds, and copyTo of the right size gives back "
    "exactly the bytes written",
)
COPY_VALIDATES_MEMORY = define_rule(
    "memory_domain.copy_validates_memory",
    "copyFrom and copyTo with a memory of the wrong size, or copyFrom with dimensions that are not fully specified "
    "or conflict with the buffer's, answer INVALID_ARGUMENT",
)
ILLEGAL_USE_REJECTED = define_rule(
    "memory_domain.illegal_use_rejected",
    "an execution using a buffer outside its roles, with another prepared model, as input and output or as two "
    "outputs, with conflicting dimensions or through an unknown token answers INVALID_ARGUMENT, no shapes, no timing",
)
VALUES_MATCH_REFERENCE = define_rule(
    "memory_domain.values_match_reference",
    "executions reading or writing a buffer produce the reference's values: in their outputs and in the buffer",
)

# --- The buffer's model -----------------------------------------------------------------------------------------

# Its states, and why it is uninitialized.
INITIALIZED, UNINITIALIZED, UNSURE = "initialized", "uninitialized", "initialized or not"
NEVER_WRITTEN, FAILED_EXECUTION, FAILED_COPY = "never written", "failed execution", "failed copyFrom"
_UNINITIALIZED_RULES = {
    NEVER_WRITTEN: UNINITIALIZED_READ_FAILS,
    FAILED_EXECUTION: FAILED_EXECUTION_UNINITIALIZES,
    FAILED_COPY: FAILED_COPY_UNINITIALIZES,
}
# An output whose actual shape the buffer's allocated dimensions cannot hold: the execution fails (D18).
_WRONG_SHAPE = frozenset(
    {ErrorStatus.GENERAL_FAILURE, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, ErrorStatus.INVALID_ARGUMENT}
)
_U32 = 1 << 32  # tokens are below


@dataclass
class Content:
    """What a buffer holds: its dimensions and values (None: not judged), bit-exact or the reference's."""

    dims: tuple[int, ...]
    value: np.ndarray | None
    exact: bool
    relaxed: bool = False
    quantized_operations: int = 1  # of the model that computed it (the random-graph criterion for quantized values)
    locus: str = ""  # the operation that computed it, named by a wrong read-back
    defined_exactly: bool = False  # an output the HAL defines exactly (harness.oracle.exactness): no tolerance
    # Whether the reference that computed it is stable under its probes (harness.oracle.outputs), asked only of a
    # read-back out of tolerance: on an edge no implementation is judged.
    stable: Callable[[], bool] | None = None


@dataclass
class BufferModel:
    """The oracle's model of one driver buffer (D17, D18): allocated dimensions, state and content.

    lost: the oracle can no longer tell what the buffer holds nor what a use of it must answer (an execution with
    an unspecified result, or an empty output written into it): nothing after that is judged.
    """

    allocated: list[int]
    operand_type: int
    state: str = UNINITIALIZED
    content: Content | None = None
    reason: str = NEVER_WRITTEN  # why it is uninitialized
    lost: bool = False

    @property
    def scalar(self) -> bool:
        return is_scalar_type(self.operand_type)

    def byte_size(self, dims: Sequence[int]) -> int:
        """Bytes of a content of these dimensions."""
        return element_size(self.operand_type) * (1 if self.scalar else math.prod(dims))

    @property
    def allocated_size(self) -> int | None:
        """Bytes the allocated dimensions fix, when they are all known."""
        if self.scalar:
            return element_size(self.operand_type)
        return None if has_unknown_dimensions(self.allocated) else self.byte_size(self.allocated)

    @property
    def content_size(self) -> int | None:
        """Bytes copyTo must be given: the content's size, else the allocated one (None when neither is known)."""
        return self.byte_size(self.content.dims) if self.content is not None else self.allocated_size

    def write(self, content: Content) -> None:
        """A successful copyFrom or execution wrote it."""
        self.state, self.content = INITIALIZED, content

    def fail(self, reason: str) -> None:
        """A failed copyFrom or execution: uninitialized (D17)."""
        self.state, self.content, self.reason = UNINITIALIZED, None, reason

    def unsure(self) -> None:
        """An outcome the HAL leaves open: initialized as before, or uninitialized."""
        if self.state == INITIALIZED:
            self.state = UNSURE

    def resolve(self, initialized: bool) -> None:
        """A read told whether it is initialized."""
        if self.state == UNSURE:
            if initialized:
                self.state = INITIALIZED
            else:
                self.fail(FAILED_EXECUTION)

    def describe(self) -> str:
        """One line for a breach's details."""
        content = "" if self.content is None else f", content {list(self.content.dims)}"
        why = f" ({self.reason})" if self.state == UNINITIALIZED else ""
        return f"buffer: allocated dimensions {self.allocated}, {self.state}{why}{content}"


class _Answer(Protocol):
    """What the judging functions read of an execution's outcome (harness.paths.Outcome)."""

    path: str
    status: ErrorStatus
    output_shapes: list[OutputShape]


# --- allocate (D15) ---------------------------------------------------------------------------------------------


def judge_allocation(
    status: ErrorStatus,
    buffer: object | None,
    token: int,
    *,
    valid: bool,
    operand_type: int | None,
    dimensions: Sequence[int] | None,
    broken: str = "",
    details: str = "",
) -> Breach | None:
    """IDevice::allocate's answer for roles of this operand type and merged dimensions.

    Roles that break D15 (`valid` false, `broken` saying which clause and how) get INVALID_ARGUMENT, or
    GENERAL_FAILURE too when the size is dynamic, with no buffer and token 0. Valid roles get NONE with a buffer
    and a token in (0, 2**32), or GENERAL_FAILURE (unsupported) with no buffer and token 0.
    """
    answer = (
        f"allocate answered {status.name} with {'a buffer' if buffer is not None else 'no buffer'} and token {token}"
    )
    if not valid:
        allowed = {ErrorStatus.INVALID_ARGUMENT}
        scalar = operand_type is not None and is_scalar_type(operand_type)
        if not scalar and (dimensions is None or has_unknown_dimensions(dimensions)):
            allowed.add(ErrorStatus.GENERAL_FAILURE)  # the size is dynamic: the driver may call it unsupported
        if status in allowed and buffer is None and token == 0:
            return None
        return Breach(ALLOCATE_VALIDATES_ROLES, f"{answer} for roles that break {broken}", details)
    if status == ErrorStatus.NONE and buffer is not None and 0 < token < _U32:
        return None
    if status == ErrorStatus.GENERAL_FAILURE and buffer is None and token == 0:
        return None
    return Breach(ALLOCATE_ACCEPTS_VALID_ROLES, f"{answer} for valid roles", details)


# --- copies (D17, D18) ------------------------------------------------------------------------------------------


def judge_copy_from(
    b: BufferModel, given: Sequence[int], size: int, status: ErrorStatus, values: Callable[[Sequence[int]], np.ndarray]
) -> Breach | None:
    """IBuffer::copyFrom of a memory of `size` bytes with dimensions `given` answered `status`.

    It must refuse a wrong size or dimensions with INVALID_ARGUMENT and accept the rest; a failure leaves the buffer
    uninitialized, a success holds exactly the memory's values (`values(dims)`: them in these dimensions).
    """
    problem, effective = _copy_from_problem(b, given, size)
    what = f"copyFrom of {size} bytes with dimensions {list(given)}"
    before = b.describe()
    if status != ErrorStatus.NONE:
        b.fail(FAILED_COPY)  # whatever the reason (D17)
    if problem is not None:
        if status == ErrorStatus.INVALID_ARGUMENT:
            return None
        return Breach(COPY_VALIDATES_MEMORY, f"{what} answered {status.name}: {problem}", before)
    if status != ErrorStatus.NONE:
        return Breach(COPY_ROUND_TRIPS, f"{what} answered {status.name} for a valid copy", before)
    b.write(Content(tuple(effective), values(effective), exact=True))
    return None


def _copy_from_problem(b: BufferModel, given: Sequence[int], size: int) -> tuple[str | None, list[int]]:
    """(why IBuffer::copyFrom must refuse these dimensions and this memory size, or None; effective dims)."""
    if b.scalar:
        if given:
            return "a scalar buffer takes no dimensions", []
        effective: list[int] = []
    elif not given:
        if has_unknown_dimensions(b.allocated):
            return f"no dimensions for a buffer allocated with unknown ones {b.allocated}", []
        effective = list(b.allocated)
    elif 0 in given:
        return "dimensions given must be fully specified", []
    elif merge_dimensions(b.allocated, given) is None:
        return f"dimensions conflict with the allocated {b.allocated}", []
    else:
        effective = list(given)
    needed = b.byte_size(effective)
    if size != needed:
        return f"the memory has {size} bytes, the dimensions need {needed}", []
    return None, effective


def copy_to_statuses(state: str, size_ok: bool | None) -> frozenset[ErrorStatus]:
    """What copyTo may answer in this state with a memory of the right size (True), wrong (False) or unknowable."""
    if state == INITIALIZED:
        return frozenset({ErrorStatus.NONE if size_ok is not False else ErrorStatus.INVALID_ARGUMENT})
    if state == UNINITIALIZED:
        if size_ok is True:
            return frozenset({ErrorStatus.GENERAL_FAILURE})
        return frozenset({ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT})
    if size_ok is not False:
        return frozenset({ErrorStatus.NONE, ErrorStatus.GENERAL_FAILURE})
    return frozenset({ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT})


def judge_copy_to(
    b: BufferModel,
    size: int,
    status: ErrorStatus,
    read: Callable[[Sequence[int]], np.ndarray],
    *,
    peek: bool = False,
) -> Breach | None:
    """IBuffer::copyTo into a memory of `size` bytes answered `status`; `read(dims)` gives what the memory got.

    It must fail on an uninitialized buffer and on a memory of the wrong size, and otherwise give back the content:
    exactly the bytes a copyFrom wrote, the reference's values within tolerance for an execution's. `peek`: the
    harness read the buffer back before an execution reads it. Afterwards the content is known exactly.
    """
    right = b.content_size
    size_ok = None if right is None else size == right
    what = f"copyTo of {size} bytes" + (" (reading the buffer back before an execution reads it)" if peek else "")
    allowed = copy_to_statuses(b.state, size_ok)
    if status not in allowed:
        if b.state == UNINITIALIZED and status == ErrorStatus.NONE:
            rule = _UNINITIALIZED_RULES[b.reason]
        elif size_ok is False:
            rule = COPY_VALIDATES_MEMORY
        else:
            rule = COPY_ROUND_TRIPS
        expected = " or ".join(sorted(s.name for s in allowed))
        return Breach(rule, f"{what} answered {status.name}, expected {expected}", b.describe())
    if status != ErrorStatus.NONE:
        if status == ErrorStatus.GENERAL_FAILURE:
            b.resolve(False)
        return None
    b.resolve(True)
    content = b.content
    assert content is not None
    actual = read(content.dims)
    if content.value is not None:
        if content.exact:
            if actual.tobytes() != np.ascontiguousarray(content.value).tobytes():
                return Breach(COPY_ROUND_TRIPS, f"{what} gave back other bytes than were written", b.describe())
        else:
            comparison = compare(
                content.value,
                actual,
                b.operand_type,
                content.relaxed,
                quantized_operations=content.quantized_operations,
                exact=content.defined_exactly,
            )
            if not comparison.ok and (content.stable is None or content.stable()):
                return Breach(
                    VALUES_MATCH_REFERENCE,
                    f"{what}: the buffer an execution wrote differs from the reference",
                    f"{comparison.describe()}; {b.describe()}",
                    locus=content.locus,
                )
    b.content = Content(content.dims, actual, exact=True)
    return None


# --- executions (D16, D17, D18) ---------------------------------------------------------------------------------


def illegal_uses(
    b: BufferModel,
    model: Model,
    ins: Sequence[int],
    outs: Sequence[int],
    dims: Sequence[int],
    *,
    input_roles: Collection[int],
    output_roles: Collection[int],
    own_model: bool = True,
    own_token: bool = True,
) -> list[str]:
    """Why D16 forbids an execution of `model` with the buffer as main inputs `ins` and outputs `outs`, its
    arguments given dimensions `dims` (empty when it is legal).

    input_roles, output_roles: the io indexes of `model` the buffer has a role for; own_model: the prepared model
    is one the buffer was allocated for; own_token: the request names the buffer by its token.
    """
    why = []
    if not own_token:
        why.append("a token that names no buffer")
    if not own_model:
        why.append("a prepared model the buffer was not allocated for")
    why += [f"input {io} is not a role of the buffer" for io in ins if io not in input_roles]
    why += [f"output {io} is not a role of the buffer" for io in outs if io not in output_roles]
    if ins and outs:
        why.append("the buffer is both an input and an output")
    if len(outs) > 1:
        why.append("the buffer is two outputs")
    if dims:
        main = model.main
        operands = [main.operands[main.input_indexes[i]] for i in ins] + [
            main.operands[main.output_indexes[o]] for o in outs
        ]
        dims = list(dims)
        if merge_dimensions(b.allocated, dims) is None:
            why.append(f"dimensions {dims} conflict with the buffer's {b.allocated}")
        elif any(merge_dimensions(op.dimensions, dims) is None for op in operands):
            why.append(f"dimensions {dims} conflict with the operand's")
        elif ins and b.content is not None and merge_dimensions(list(b.content.dims), dims) is None:
            why.append(f"dimensions {dims} conflict with the buffer's content {list(b.content.dims)}")
    return why


def judge_illegal_use(
    b: BufferModel, outcome: _Answer, why: Sequence[str], *, reads: bool, writes: bool
) -> Breach | None:
    """D16: an illegal use (`why`, from illegal_uses) is refused with INVALID_ARGUMENT (GENERAL_FAILURE too when it
    reads an uninitialized buffer), no shapes and no timing. Whether a refused request that was to write the buffer
    counts as a failed execution (D17) is left open."""
    allowed = {ErrorStatus.INVALID_ARGUMENT}
    if reads and b.state != INITIALIZED:
        allowed.add(ErrorStatus.GENERAL_FAILURE)
    before = b.describe()
    if writes:
        b.unsure()
    title = f"{outcome.path} execution answered {outcome.status.name} for an illegal use: {why[0]}"
    if outcome.status not in allowed:
        return Breach(ILLEGAL_USE_REJECTED, title, "; ".join(why) + f"; {before}", path=outcome.path)
    if outcome.output_shapes:
        return Breach(ILLEGAL_USE_REJECTED, f"{title}, with output shapes", path=outcome.path)
    return judge_timing(outcome, False) or judge_notes(outcome)


def judge_uninitialized_read(
    b: BufferModel, outcome: _Answer, model: Model, ins: Sequence[int], dims: Sequence[int]
) -> Breach | None:
    """D17: a legal execution of `model` reading the uninitialized buffer as inputs `ins` is GENERAL_FAILURE.

    When such an input's dimensions are known nowhere (not by the model, the request's `dims` nor the allocation:
    the buffer has no content to give them), refusing the request as one with an input of unknown dimensions (V33,
    INVALID_ARGUMENT) is right as well.
    """
    allowed = {ErrorStatus.GENERAL_FAILURE}
    if _dims_unknown(b, model, ins, dims):
        allowed.add(ErrorStatus.INVALID_ARGUMENT)
    if outcome.status not in allowed:
        return Breach(
            _UNINITIALIZED_RULES[b.reason],
            f"{outcome.path} execution read an uninitialized buffer and answered {outcome.status.name}",
            b.describe(),
            path=outcome.path,
        )
    if outcome.output_shapes:
        return Breach(
            UNINITIALIZED_READ_FAILS, f"{outcome.path}: output shapes with {outcome.status.name}", path=outcome.path
        )
    return judge_timing(outcome, False) or judge_notes(outcome)


def _dims_unknown(b: BufferModel, model: Model, ins: Sequence[int], dims: Sequence[int]) -> bool:
    """Some input the buffer gives has dimensions that neither the model, the request nor the allocation know."""
    main = model.main
    for io in ins:
        operand = main.operands[main.input_indexes[io]]
        if is_scalar_type(operand.type):
            continue
        known = merge_dimensions(merge_dimensions(operand.dimensions, list(dims)) or [], b.allocated)
        if known is None or has_unknown_dimensions(known):
            return True
    return False


@dataclass(frozen=True)
class LegalUse:
    """One execution using the buffer as D16 allows, as it was run, and what the oracle knows of it."""

    model: Model
    ins: Sequence[int]  # main inputs the buffer gave (then no output is the buffer)
    outs: Sequence[int]  # main outputs written into the buffer (at most one)
    reference: ReferenceResult  # the reference's result, the buffer's content as its inputs `ins`
    lengths: Sequence[int | None]  # bytes given to each regular output (None for the buffer)
    read_output: Callable[[int, Sequence[int]], np.ndarray]  # regular output j's values in these dimensions
    generated_inputs: Sequence[np.ndarray | None]  # the input values the model was generated with
    supported: bool = True  # getSupportedOperations flagged every operation supported
    deadline_passed: bool = False
    # Whether the reference's result is stable under its probes (harness.oracle.outputs.reference_is_stable), asked
    # only of values out of tolerance.
    stable: Callable[[], bool] = lambda: True


def judge_legal_use(b: BufferModel, outcome: _Answer, use: LegalUse) -> tuple[Breach | None, str | None]:
    """A legal execution reading an initialized buffer or writing it: (breach, dispute).

    Status, shapes and values must be what the reference prescribes (an output the buffer's allocated dimensions
    cannot hold fails, D18); the buffer is then written with the reference's output, or uninitialized by a failure
    (INVALID_ARGUMENT may be a refusal that changes nothing). A failure reading a content the model was not generated
    with is not judged: the dispute says why (a driver may check relations between inputs that the reference
    does not).
    """
    reference = use.reference
    status = outcome.status
    allowed, expectation, why = _legal_statuses(b, use, outcome.path)
    if use.ins and status in _DATA_FAILURES and reference.status == ErrorStatus.NONE and _unusual(b, use):
        # Reading left the buffer as it was.
        return None, f"{status.name} for an input from the buffer the model was not generated with"
    before = b.describe()
    if use.outs:
        _written(b, use, status, status in allowed)
    if expectation is not None:
        findings = judge_execution(outcome, expectation)
        if findings:
            return findings[0], None
    else:
        if status not in allowed:
            names = " or ".join(sorted(s.name for s in allowed))
            return Breach(
                STATUS_EXPECTED,
                f"{outcome.path} execution answered {status.name}, expected {names}",
                f"reference {reference.status.name}{why}; {before}",
                path=outcome.path,
            ), None
        finding = judge_notes(outcome) or judge_timing(outcome, False)
        if finding is not None:
            return finding, None
        if status not in (ErrorStatus.NONE, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE) and outcome.output_shapes:
            return Breach(STATUS_EXPECTED, f"{outcome.path}: output shapes with {status.name}", path=outcome.path), None
    if status != ErrorStatus.NONE or expectation is None or expectation.status != ErrorStatus.NONE:
        return None, None
    return _judge_values(use, outcome.path), None


def _legal_statuses(b: BufferModel, use: LegalUse, path: str) -> tuple[set[ErrorStatus], Expectation | None, str]:
    """(statuses a legal execution may end with, the full expectation when the reference prescribes one, why)."""
    reference = use.reference
    fits = [
        _fits(b.allocated, np.shape(reference.outputs[o]))
        for o in use.outs
        if reference.status == ErrorStatus.NONE and not reference.unspecified
    ]
    unsupported = set() if use.supported else {ErrorStatus.GENERAL_FAILURE}
    if use.deadline_passed:
        return set(MISSED_DEADLINE) | unsupported, None, " (the deadline had passed)"
    if reference.unspecified:
        b.lost = True  # neither status nor content can be known
        return set(ErrorStatus), None, " (unspecified)"
    if reference.status != ErrorStatus.NONE:
        return set(_DATA_FAILURES) | unsupported, None, ""
    if None in fits:
        # An empty output: its zero dimension also reads as "unknown" in the HAL, so whether the buffer's
        # allocated dimensions can hold it is open.
        b.lost = True
        return {ErrorStatus.NONE} | _WRONG_SHAPE, None, " (an empty output)"
    if False in fits:
        return set(_WRONG_SHAPE) | unsupported, None, ", an output the buffer's dimensions cannot hold"
    expected_status, shapes = judge_output_sizes(use.model, list(use.lengths), reference.outputs)
    expectation = Expectation(
        status=expected_status,
        shapes=shapes,
        fully_specified=_fully_specified(b, use.model, use.outs),
        unsupported_ok=not use.supported,
    )
    return set(expectation.acceptable(path)), expectation, ""


def _fits(allocated: Sequence[int], actual: Sequence[int]) -> bool | None:
    """Whether a buffer of these allocated dimensions holds an output of this actual shape (None: it is empty)."""
    if 0 in actual:
        return None
    if not allocated:
        return True
    return len(allocated) == len(actual) and all(a in (0, x) for a, x in zip(allocated, actual))


def _fully_specified(b: BufferModel, model: Model, outs: Sequence[int]) -> bool:
    """Every output's dimensions are known before the execution (the buffer's from its allocation)."""
    main = model.main
    for j, index in enumerate(main.output_indexes):
        operand = main.operands[index]
        if is_scalar_type(operand.type):
            continue
        dims = merge_dimensions(operand.dimensions, b.allocated) if j in outs else list(operand.dimensions)
        if dims is None or has_unknown_dimensions(dims):
            return False
    return True


def _unusual(b: BufferModel, use: LegalUse) -> bool:
    """The buffer's content is not the value the model's inputs `use.ins` were generated with."""
    assert b.content is not None and b.content.value is not None
    mine = np.ascontiguousarray(b.content.value)
    for io in use.ins:
        generated = use.generated_inputs[io]
        if generated is None or np.shape(generated) != mine.shape:
            return True
        if np.ascontiguousarray(generated, dtype=mine.dtype).tobytes() != mine.tobytes():
            return True
    return False


def _written(b: BufferModel, use: LegalUse, status: ErrorStatus, allowed: bool) -> None:
    """The buffer's state after an execution that was to write it: written on NONE; after a failure
    uninitialized, unless the failure was INVALID_ARGUMENT (which may be a refusal that changes nothing)."""
    if b.lost:
        b.unsure()
    elif status == ErrorStatus.NONE and allowed:
        model, out = use.model, use.outs[0]
        value = use.reference.outputs[out]
        judged = value if out not in unspecified_outputs(model) else None
        relaxed = model.relax_computation_float32_to_float16
        locus = output_producer(model, out)
        defined_exactly = out in exact_outputs(model)
        b.write(
            Content(
                tuple(np.shape(value)),
                judged,
                False,
                relaxed,
                quantized_operations(model),
                locus,
                defined_exactly,
                use.stable,
            )
        )
    elif status == ErrorStatus.INVALID_ARGUMENT:
        b.unsure()
    else:
        b.fail(FAILED_EXECUTION)


def _judge_values(use: LegalUse, path: str) -> Breach | None:
    """O2 on the regular outputs of a successful execution (the buffer's are judged when read back)."""
    main = use.model.main
    expected = use.reference.outputs
    actual = [expected[j] if j in use.outs else use.read_output(j, np.shape(expected[j])) for j in range(len(expected))]
    finding = judge_outputs(
        path,
        actual,
        expected,
        [main.operands[index].type for index in main.output_indexes],
        use.model.relax_computation_float32_to_float16,
        ignore=unspecified_outputs(use.model) | set(use.outs),
        quantized_operations=quantized_operations(use.model),
        exact=exact_outputs(use.model),
    )
    if finding is None or not use.stable():
        return None  # an ill-conditioned reference (an edge) judges no implementation
    output, title = finding.output, f"{finding.title} ({finding.rule})"
    locus = output_producer(use.model, output) if output is not None else ""
    return Breach(VALUES_MATCH_REFERENCE, title, finding.details, path=path, output=output, locus=locus)
