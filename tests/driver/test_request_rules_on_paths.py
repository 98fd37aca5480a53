"""V30-V37: every invalid request is INVALID_ARGUMENT on every execution path, with no shapes and no timing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.case import LiveRequest, simple_request
from harness.hal import DataLocation, ErrorStatus, Model, RequestArgument
from harness.paths import ExecutionArgs
from tests.driver.conftest import f32, prepared
from tests.driver.models import add_model, add_then_mul_model
from tests.driver.test_execution_contract import assert_failed_cleanly

A = f32([[1, 2], [3, 4]])


def _drop_input(rb: LiveRequest) -> None:
    rb.request.inputs.pop()


def _extra_output(rb: LiveRequest) -> None:
    rb.request.outputs.append(RequestArgument(False, DataLocation(1, 0, 16), []))


def _outside_pool(rb: LiveRequest) -> None:
    rb.request.inputs[0].location = DataLocation(0, rb.memories[0].size, 16)


def _conflicting_dims(rb: LiveRequest) -> None:
    rb.request.inputs[0].dimensions = [4, 1]


def _overlapping_outputs(rb: LiveRequest) -> None:
    rb.request.outputs[1].location = DataLocation(1, 8, 16)


def _pool_index_out_of_range(rb: LiveRequest) -> None:
    rb.request.inputs[1].location = DataLocation(7, 0, 16)


def _no_value_with_location(rb: LiveRequest) -> None:
    rb.request.inputs[0].has_no_value = True


def _no_value_with_dimensions(rb: LiveRequest) -> None:
    rb.request.inputs[0] = RequestArgument(True, DataLocation(), [2, 2])


def _length_not_the_input_size(rb: LiveRequest) -> None:
    loc = rb.request.inputs[0].location
    rb.request.inputs[0].location = DataLocation(loc.pool_index, loc.offset, loc.length - 4)


# rule -> (model builder, mutation); every model has two inputs and the request is valid before mutation.
RULES: dict[str, tuple[Callable[[], Model], Callable[[LiveRequest], None]]] = {
    "V30-input-removed": (add_model, _drop_input),
    "V30-output-added": (add_model, _extra_output),
    "V31-location-outside-pool": (add_model, _outside_pool),
    "V31-length-not-operand-size": (add_model, _length_not_the_input_size),
    "V32-dimensions-conflict": (add_model, _conflicting_dims),
    "V34-overlapping-outputs": (add_then_mul_model, _overlapping_outputs),
    "V35-pool-index-out-of-range": (add_model, _pool_index_out_of_range),
    "V36-no-value-with-location": (add_model, _no_value_with_location),
    "V36-no-value-with-dimensions": (add_model, _no_value_with_dimensions),
}


def _request(model: Model) -> LiveRequest:
    outputs = len(model.main.output_indexes)
    return simple_request(model, [A, A], [16] * outputs, output_dims=[[2, 2]] * outputs)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_invalid_requests_are_rejected_on_every_path(device, path, rule: str) -> None:
    _, run = path
    build, mutate = RULES[rule]
    model = build()
    pm = prepared(device, model)
    with _request(model) as rb:
        assert run(pm, rb.request, ExecutionArgs()).status == ErrorStatus.NONE  # valid before the mutation
        mutate(rb)
        assert_failed_cleanly(run(pm, rb.request, ExecutionArgs()), ErrorStatus.INVALID_ARGUMENT)


def test_v33_an_input_left_with_unknown_dimensions_is_rejected(device, path) -> None:
    _, run = path
    model = add_model(dims=[0, 2], out_dims=[0, 2])
    pm = prepared(device, model)
    with simple_request(model, [A, A], [16], output_dims=[[2, 2]]) as rb:
        assert run(pm, rb.request, ExecutionArgs()).status == ErrorStatus.NONE
        rb.request.inputs[0].dimensions = []
        assert_failed_cleanly(run(pm, rb.request, ExecutionArgs()), ErrorStatus.INVALID_ARGUMENT)


def test_v37_fenced_execution_needs_fully_specified_outputs(device) -> None:
    from harness.paths import run_fenced, run_synchronous

    model = add_model(out_dims=[0, 0])
    pm = prepared(device, model)
    with simple_request(model, [A, A], [16]) as rb:
        assert run_synchronous(pm, rb.request, ExecutionArgs()).status == ErrorStatus.NONE
        assert_failed_cleanly(run_fenced(pm, rb.request, ExecutionArgs()), ErrorStatus.INVALID_ARGUMENT)
        rb.request.outputs[0].dimensions = [2, 2]
        assert run_fenced(pm, rb.request, ExecutionArgs()).status == ErrorStatus.NONE


def test_v37_fenced_execution_refuses_zero_sized_outputs(device) -> None:
    from harness.paths import run_fenced

    model = add_model(out_dims=[0, 2])
    pm = prepared(device, model)
    with simple_request(model, [A, A], [16]) as rb:
        rb.request.outputs[0].dimensions = [0, 2]
        assert_failed_cleanly(run_fenced(pm, rb.request, ExecutionArgs()), ErrorStatus.INVALID_ARGUMENT)


@pytest.mark.parametrize("dims", [[0, 2], [2, 0]])
def test_v33_request_dimensions_given_for_an_input_must_all_be_specified(device, path, dims) -> None:
    _, run = path
    pm = prepared(device, add_model())
    with _request(add_model()) as rb:
        rb.request.inputs[0].dimensions = dims
        assert_failed_cleanly(run(pm, rb.request, ExecutionArgs()), ErrorStatus.INVALID_ARGUMENT)


def test_v32_a_huge_conflicting_dimension_is_a_conflict_not_a_resource_problem(device, path) -> None:
    _, run = path
    pm = prepared(device, add_model())
    with _request(add_model()) as rb:
        rb.request.inputs[0].dimensions = [2**32 - 1, 2]
        assert_failed_cleanly(run(pm, rb.request, ExecutionArgs()), ErrorStatus.INVALID_ARGUMENT)
