"""The memory-domain rules and the oracle's buffer model (harness.oracle.buffers): each judging function against
answers written by hand, on out = ADD(a, b) with TENSOR_FLOAT32 [2, 2] operands (sums computed by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.hal import ErrorStatus, OperandType, OutputShape, Timing
from harness.oracle.buffers import (
    ALLOCATE_ACCEPTS_VALID_ROLES,
    ALLOCATE_VALIDATES_ROLES,
    COPY_ROUND_TRIPS,
    COPY_VALIDATES_MEMORY,
    FAILED_COPY,
    FAILED_COPY_UNINITIALIZES,
    FAILED_EXECUTION,
    FAILED_EXECUTION_UNINITIALIZES,
    ILLEGAL_USE_REJECTED,
    INITIALIZED,
    NEVER_WRITTEN,
    UNINITIALIZED,
    UNINITIALIZED_READ_FAILS,
    UNSURE,
    VALUES_MATCH_REFERENCE,
    BufferModel,
    Content,
    LegalUse,
    copy_to_statuses,
    illegal_uses,
    judge_allocation,
    judge_copy_from,
    judge_copy_to,
    judge_illegal_use,
    judge_legal_use,
    judge_uninitialized_read,
)
from harness.oracle.rules import STATUS_EXPECTED
from harness.oracle.verdict import RULES
from harness.paths import Outcome
from harness.reference import ReferenceResult, run_model
from tests.driver.models import add_model

F32 = int(OperandType.TENSOR_FLOAT32)
NONE, GENERAL, INVALID = ErrorStatus.NONE, ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT
A = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
B = np.array([[10.0, 20.0], [30.0, 40.0]], np.float32)
SUM = np.array([[11.0, 22.0], [33.0, 44.0]], np.float32)


def buffer(allocated=(2, 2), operand_type=F32) -> BufferModel:
    return BufferModel(list(allocated), operand_type)


def written(value=A, exact=True) -> BufferModel:
    b = buffer()
    b.write(Content(np.shape(value), value, exact))
    return b


def values_of(array: np.ndarray):
    """A `values`/`read` callback: the array's values in the dimensions asked for."""
    return lambda dims: np.asarray(array, np.float32).reshape(tuple(dims))


def test_the_rule_ids_stay_what_findings_and_reports_share() -> None:
    ids = {
        ALLOCATE_VALIDATES_ROLES,
        ALLOCATE_ACCEPTS_VALID_ROLES,
        UNINITIALIZED_READ_FAILS,
        FAILED_EXECUTION_UNINITIALIZES,
        FAILED_COPY_UNINITIALIZES,
        COPY_ROUND_TRIPS,
        COPY_VALIDATES_MEMORY,
        ILLEGAL_USE_REJECTED,
        VALUES_MATCH_REFERENCE,
    }
    expected = {
        "allocate_validates_roles",
        "allocate_accepts_valid_roles",
        "uninitialized_read_fails",
        "failed_execution_uninitializes",
        "failed_copy_uninitializes",
        "copy_round_trips",
        "copy_validates_memory",
        "illegal_use_rejected",
        "values_match_reference",
    }
    assert ids == {f"memory_domain.{name}" for name in expected}
    assert ids <= set(RULES)


# --- the model ------------------------------------------------------------------------------------------------------


def test_sizes_follow_the_allocated_dimensions_and_the_content() -> None:
    assert buffer().allocated_size == 16 and buffer().content_size == 16
    assert buffer((0, 2)).allocated_size is None and buffer(()).content_size is None
    assert buffer((), int(OperandType.INT32)).allocated_size == 4  # a scalar's size is its type's
    dynamic = buffer((0, 2))
    dynamic.write(Content((3, 2), np.zeros((3, 2), np.float32), True))
    assert dynamic.content_size == 24 and dynamic.byte_size((5, 2)) == 40


def test_states_follow_writes_failures_and_open_outcomes() -> None:
    b = buffer()
    assert (b.state, b.reason) == (UNINITIALIZED, NEVER_WRITTEN)
    b.unsure()  # an open outcome leaves an uninitialized buffer uninitialized
    assert b.state == UNINITIALIZED
    b.write(Content((2, 2), A, True))
    assert b.state == INITIALIZED
    b.unsure()
    assert b.state == UNSURE
    b.resolve(True)
    assert b.state == INITIALIZED and b.content is not None
    b.unsure()
    b.resolve(False)
    assert (b.state, b.reason, b.content) == (UNINITIALIZED, FAILED_EXECUTION, None)
    b.fail(FAILED_COPY)
    assert b.describe() == "buffer: allocated dimensions [2, 2], uninitialized (failed copyFrom)"
    assert written().describe() == "buffer: allocated dimensions [2, 2], initialized, content [2, 2]"


@pytest.mark.parametrize(
    ("state", "size_ok", "allowed"),
    [
        (INITIALIZED, True, {NONE}),
        (INITIALIZED, None, {NONE}),
        (INITIALIZED, False, {INVALID}),
        (UNINITIALIZED, True, {GENERAL}),
        (UNINITIALIZED, None, {GENERAL, INVALID}),
        (UNINITIALIZED, False, {GENERAL, INVALID}),
        (UNSURE, True, {NONE, GENERAL}),
        (UNSURE, False, {GENERAL, INVALID}),
    ],
)
def test_what_copy_to_may_answer(state, size_ok, allowed) -> None:
    assert copy_to_statuses(state, size_ok) == allowed


# --- allocate -------------------------------------------------------------------------------------------------------


def _allocate(status, buffer_given, token, valid=True, dims=(2, 2), operand_type=F32):
    return judge_allocation(
        status,
        object() if buffer_given else None,
        token,
        valid=valid,
        operand_type=operand_type,
        dimensions=list(dims),
        broken="D15.frequency (frequency_zero)",
    )


def test_valid_roles_get_a_buffer_and_a_token_or_unsupported() -> None:
    assert _allocate(NONE, True, 1) is None
    assert _allocate(GENERAL, False, 0) is None
    for answer in ((NONE, True, 0), (NONE, True, 1 << 32), (NONE, False, 3), (GENERAL, True, 0), (INVALID, False, 0)):
        assert _allocate(*answer).rule == ALLOCATE_ACCEPTS_VALID_ROLES


def test_broken_roles_are_refused_general_failure_only_for_a_dynamic_size() -> None:
    assert _allocate(INVALID, False, 0, valid=False) is None
    refused = _allocate(GENERAL, False, 0, valid=False)
    assert refused.rule == ALLOCATE_VALIDATES_ROLES
    assert refused.title == "allocate answered GENERAL_FAILURE with no buffer and token 0 for roles that break " + (
        "D15.frequency (frequency_zero)"
    )
    assert _allocate(GENERAL, False, 0, valid=False, dims=(0, 2)) is None
    assert _allocate(GENERAL, False, 0, valid=False, dims=(), operand_type=int(OperandType.INT32)).rule == (
        ALLOCATE_VALIDATES_ROLES
    )
    assert _allocate(INVALID, False, 5, valid=False).rule == ALLOCATE_VALIDATES_ROLES
    assert _allocate(NONE, True, 5, valid=False).rule == ALLOCATE_VALIDATES_ROLES


# --- copies ---------------------------------------------------------------------------------------------------------


def test_a_valid_copy_from_writes_exactly_what_the_memory_held() -> None:
    b = buffer()
    assert judge_copy_from(b, [], 16, NONE, values_of(A)) is None  # no dimensions: the allocated ones
    assert b.state == INITIALIZED and b.content.exact and b.content.dims == (2, 2)
    np.testing.assert_array_equal(b.content.value, A)
    dynamic = buffer((0, 2))
    assert judge_copy_from(dynamic, [3, 2], 24, NONE, values_of(np.zeros(6))) is None
    assert dynamic.content.dims == (3, 2)


@pytest.mark.parametrize(
    ("allocated", "given", "size", "problem"),
    [
        ((2, 2), [2, 2], 20, "the memory has 20 bytes, the dimensions need 16"),
        ((2, 2), [2, 0], 16, "dimensions given must be fully specified"),
        ((2, 2), [4, 1], 16, "dimensions conflict with the allocated [2, 2]"),
        ((0, 2), [], 16, "no dimensions for a buffer allocated with unknown ones [0, 2]"),
        ((), [1], 4, None),  # INT32 scalar below: no dimensions allowed
    ],
)
def test_copy_from_must_refuse_a_wrong_memory(allocated, given, size, problem) -> None:
    scalar = not allocated
    b = buffer(allocated, int(OperandType.INT32) if scalar else F32)
    problem = problem or "a scalar buffer takes no dimensions"
    assert judge_copy_from(b, given, size, INVALID, values_of(A)) is None
    assert (b.state, b.reason) == (UNINITIALIZED, FAILED_COPY)
    accepted = judge_copy_from(buffer(allocated, b.operand_type), given, size, NONE, values_of(A))
    assert accepted.rule == COPY_VALIDATES_MEMORY and accepted.title.endswith(problem)


def test_a_valid_copy_from_that_fails_uninitializes_and_breaks_copy_round_trips() -> None:
    b = written()
    finding = judge_copy_from(b, [2, 2], 16, GENERAL, values_of(B))
    assert finding.rule == COPY_ROUND_TRIPS
    assert finding.details == "buffer: allocated dimensions [2, 2], initialized, content [2, 2]"  # before the copy
    assert (b.state, b.reason) == (UNINITIALIZED, FAILED_COPY)


@pytest.mark.parametrize(
    ("reason", "rule"),
    [
        (NEVER_WRITTEN, UNINITIALIZED_READ_FAILS),
        (FAILED_EXECUTION, FAILED_EXECUTION_UNINITIALIZES),
        (FAILED_COPY, FAILED_COPY_UNINITIALIZES),
    ],
)
def test_copy_to_of_an_uninitialized_buffer_must_fail_by_the_rule_of_its_reason(reason, rule) -> None:
    b = buffer()
    if reason != NEVER_WRITTEN:
        b.fail(reason)
    assert judge_copy_to(b, 16, GENERAL, values_of(A)) is None
    assert judge_copy_to(b, 16, NONE, values_of(A)).rule == rule


def test_copy_to_gives_back_the_bytes_written_and_checks_the_size() -> None:
    assert judge_copy_to(written(), 16, NONE, values_of(A)) is None
    assert judge_copy_to(written(), 16, NONE, values_of(B)).rule == COPY_ROUND_TRIPS
    assert judge_copy_to(written(), 12, INVALID, values_of(A)) is None
    assert judge_copy_to(written(), 12, NONE, values_of(A)).rule == COPY_VALIDATES_MEMORY
    peeked = judge_copy_to(written(), 16, NONE, values_of(B), peek=True)
    assert "before an execution reads it" in peeked.title


def test_copy_to_of_an_execution_result_is_judged_within_tolerance_then_known_exactly() -> None:
    b = written(SUM, exact=False)
    assert judge_copy_to(b, 16, NONE, values_of(SUM + 1e-6)) is None
    assert b.content.exact
    np.testing.assert_array_equal(b.content.value, SUM + np.float32(1e-6))
    assert judge_copy_to(written(SUM, exact=False), 16, NONE, values_of(SUM + 1)).rule == VALUES_MATCH_REFERENCE


def test_an_execution_result_off_its_reference_is_not_judged_when_that_reference_is_on_an_edge() -> None:
    asked = []

    def stable(answer: bool):
        def probe() -> bool:
            asked.append(answer)
            return answer

        return probe

    edge = buffer()
    edge.write(Content((2, 2), SUM, False, stable=stable(False)))
    assert judge_copy_to(edge, 16, NONE, values_of(SUM + 1)) is None
    assert edge.content.exact  # what the driver wrote is known from then on
    firm = buffer()
    firm.write(Content((2, 2), SUM, False, stable=stable(True)))
    assert judge_copy_to(firm, 16, NONE, values_of(SUM + 1)).rule == VALUES_MATCH_REFERENCE
    within = buffer()
    within.write(Content((2, 2), SUM, False, stable=stable(False)))
    assert judge_copy_to(within, 16, NONE, values_of(SUM)) is None
    assert asked == [False, True]  # asked only of values out of tolerance


def test_a_read_settles_an_open_state() -> None:
    b = written()
    b.unsure()
    assert judge_copy_to(b, 16, GENERAL, values_of(A)) is None
    assert (b.state, b.reason) == (UNINITIALIZED, FAILED_EXECUTION)
    b = written()
    b.unsure()
    assert judge_copy_to(b, 16, NONE, values_of(A)) is None
    assert b.state == INITIALIZED


# --- executions -----------------------------------------------------------------------------------------------------


def _illegal(b, ins=(), outs=(), dims=(), roles=((0,), (0,)), **use) -> list[str]:
    return illegal_uses(
        b, add_model(), list(ins), list(outs), list(dims), input_roles=roles[0], output_roles=roles[1], **use
    )


def test_illegal_uses_name_what_d16_forbids() -> None:
    assert _illegal(buffer(), ins=[0]) == []
    assert _illegal(buffer(), outs=[0], dims=[2, 2]) == []
    assert _illegal(buffer(), ins=[1]) == ["input 1 is not a role of the buffer"]
    assert _illegal(buffer(), ins=[0], outs=[0]) == ["the buffer is both an input and an output"]
    assert _illegal(buffer(), outs=[0], own_token=False, own_model=False) == [
        "a token that names no buffer",
        "a prepared model the buffer was not allocated for",
    ]
    assert _illegal(buffer(), ins=[0], dims=[3, 3]) == ["dimensions [3, 3] conflict with the buffer's [2, 2]"]
    assert _illegal(buffer((0, 0)), ins=[0], dims=[3, 3]) == ["dimensions [3, 3] conflict with the operand's"]
    dynamic_model = add_model(dims=[0, 0])
    content = BufferModel([0, 0], F32, INITIALIZED, Content((2, 2), A, True))
    assert illegal_uses(content, dynamic_model, [0], [], [3, 3], input_roles={0}, output_roles=set()) == [
        "dimensions [3, 3] conflict with the buffer's content [2, 2]"
    ]


def test_an_illegal_use_is_refused_and_leaves_a_write_open() -> None:
    why = ["output 0 is not a role of the buffer"]
    b = written()
    assert judge_illegal_use(b, Outcome("sync", INVALID), why, reads=False, writes=True) is None
    assert b.state == UNSURE
    breach = judge_illegal_use(written(), Outcome("async", NONE), why, reads=False, writes=True)
    assert breach.rule == ILLEGAL_USE_REJECTED and breach.path == "async"
    assert breach.title == "async execution answered NONE for an illegal use: output 0 is not a role of the buffer"
    shapes = Outcome("sync", INVALID, output_shapes=[OutputShape([2, 2], True)])
    assert judge_illegal_use(written(), shapes, why, reads=False, writes=False).rule == ILLEGAL_USE_REJECTED
    # GENERAL_FAILURE is right too when it reads an uninitialized buffer (which check comes first is the driver's)
    assert judge_illegal_use(buffer(), Outcome("sync", GENERAL), ["input 1 ..."], reads=True, writes=False) is None
    assert judge_illegal_use(written(), Outcome("sync", GENERAL), ["input 1 ..."], reads=True, writes=False)


def test_reading_an_uninitialized_buffer_fails_by_the_rule_of_its_reason() -> None:
    model = add_model()
    b = buffer()
    b.fail(FAILED_EXECUTION)
    assert judge_uninitialized_read(b, Outcome("sync", GENERAL), model, [0], []) is None
    assert judge_uninitialized_read(b, Outcome("sync", NONE), model, [0], []).rule == FAILED_EXECUTION_UNINITIALIZES
    # INVALID_ARGUMENT only when the input's dimensions are known nowhere (V33)
    assert judge_uninitialized_read(buffer(), Outcome("sync", INVALID), model, [0], []).rule == UNINITIALIZED_READ_FAILS
    dynamic = add_model(dims=[0, 0])
    assert judge_uninitialized_read(buffer((0, 0)), Outcome("sync", INVALID), dynamic, [0], []) is None
    assert judge_uninitialized_read(buffer((0, 0)), Outcome("sync", INVALID), dynamic, [0], [2, 2]).rule == (
        UNINITIALIZED_READ_FAILS
    )
    timed = Outcome("sync", GENERAL, timing=Timing(5, 5))
    assert judge_uninitialized_read(buffer(), timed, model, [0], []).rule == "timing.absent_unless_measured"


def _use(ins=(), outs=(), reference=None, regular=None, **extra) -> LegalUse:
    """ADD(a, b) with the buffer as inputs `ins` (its content the value) or output `outs`; the regular output reads
    `regular` (the reference's value by default)."""
    model = add_model()
    if reference is None:
        reference = run_model(model, [A, B])
    read = regular if regular is not None else reference.outputs[0]
    return LegalUse(
        model,
        list(ins),
        list(outs),
        reference,
        [None if 0 in outs else 16],
        lambda j, shape: np.asarray(read, np.float32).reshape(tuple(shape)),
        [A, B],
        **extra,
    )


def test_a_successful_write_leaves_the_reference_result_in_the_buffer() -> None:
    b = buffer()
    assert judge_legal_use(b, Outcome("sync", NONE), _use(outs=[0])) == (None, None)
    assert b.state == INITIALIZED and not b.content.exact
    np.testing.assert_array_equal(b.content.value, SUM)


def test_a_failed_write_uninitializes_but_invalid_argument_leaves_it_open() -> None:
    b = written()
    breach, _ = judge_legal_use(b, Outcome("sync", GENERAL), _use(outs=[0]))
    assert breach.rule == STATUS_EXPECTED
    assert (b.state, b.reason) == (UNINITIALIZED, FAILED_EXECUTION)
    b = written()
    judge_legal_use(b, Outcome("sync", INVALID), _use(outs=[0]))
    assert b.state == UNSURE
    b = written()
    missed = Outcome("sync", ErrorStatus.MISSED_DEADLINE_TRANSIENT)
    assert judge_legal_use(b, missed, _use(outs=[0], deadline_passed=True)) == (None, None)
    assert (b.state, b.reason) == (UNINITIALIZED, FAILED_EXECUTION)


def test_a_read_produces_the_reference_values() -> None:
    assert judge_legal_use(written(A), Outcome("burst", NONE), _use(ins=[0])) == (None, None)
    breach, _ = judge_legal_use(written(A), Outcome("burst", NONE), _use(ins=[0], regular=SUM + 1))
    assert breach.rule == VALUES_MATCH_REFERENCE and breach.title.endswith("(accuracy.float32)")


def test_a_failure_reading_a_content_the_model_was_not_generated_with_is_disputed() -> None:
    breach, dispute = judge_legal_use(written(B), Outcome("sync", INVALID), _use(ins=[0]))
    assert breach is None and dispute.startswith("INVALID_ARGUMENT for an input from the buffer")
    # ... but not when it is the value generated for that input
    breach, dispute = judge_legal_use(written(A), Outcome("sync", INVALID), _use(ins=[0]))
    assert breach.rule == STATUS_EXPECTED and dispute is None


def test_an_output_the_allocation_cannot_hold_must_fail() -> None:
    b = buffer((3, 3))
    assert judge_legal_use(b, Outcome("sync", GENERAL), _use(outs=[0])) == (None, None)
    breach, _ = judge_legal_use(buffer((3, 3)), Outcome("sync", NONE), _use(outs=[0]))
    assert breach.rule == STATUS_EXPECTED and "cannot hold" in breach.details


def test_an_unspecified_result_or_an_empty_output_loses_track_of_the_buffer() -> None:
    unspecified = ReferenceResult(NONE, [SUM], unspecified=True)
    b = written()
    assert judge_legal_use(b, Outcome("sync", GENERAL), _use(outs=[0], reference=unspecified)) == (None, None)
    assert b.lost and b.state == UNSURE
    empty = ReferenceResult(NONE, [np.zeros((0, 2), np.float32)])
    b = buffer((0, 0))
    assert judge_legal_use(b, Outcome("sync", NONE), _use(outs=[0], reference=empty)) == (None, None)
    assert b.lost
