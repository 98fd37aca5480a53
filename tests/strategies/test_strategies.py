"""The Hypothesis strategies: they draw valid models and requests, and their examples shrink to small ones."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from harness.gen import GeneratedModel, ModelConfig, RequestConfig, generate_model
from harness.gen.sources import HypothesisSource
from harness.hal import ErrorStatus
from harness.reference import run_model, validate_model
from harness.strategies import model_and_inputs, models, models_with_requests, requests_for

_QUICK = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@_QUICK
@given(models())
def test_models_strategy_draws_valid_models(generated: GeneratedModel) -> None:
    assert validate_model(generated.model) == []


@_QUICK
# Without the deliberate draw of parameters out of range given at run time, which makes the reference refuse the
# execution (INVALID_ARGUMENT) on purpose; tests/gen covers those models.
@given(model_and_inputs(ModelConfig(control_flow=False, max_operations=2, parameter_out_of_range_probability=0.0)))
def test_model_and_inputs_run_on_the_reference(pair) -> None:
    model, inputs = pair
    assert len(inputs) == len(model.main.input_indexes)
    assert len(model.main.operations) <= 2
    result = run_model(model, inputs)
    assert result.status == ErrorStatus.NONE and not result.unspecified


@_QUICK
@given(st.data())
def test_requests_for_a_given_model_match_its_outputs(data) -> None:
    generated = data.draw(models(ModelConfig(max_operations=1)))
    request = data.draw(requests_for(generated, RequestConfig(too_small_probability=0.5)))
    assert len(request.request_json["inputs"]) == len(generated.inputs)
    assert len(request.request_json["outputs"]) == len(generated.model.main.output_indexes)
    for k in request.insufficient:
        assert request.output_lengths[k] < request.output_sizes[k]


@_QUICK
@given(models_with_requests())
def test_models_with_requests_carry_the_expected_result(pair) -> None:
    generated, request = pair
    if "parameter_out_of_range_input" in generated.features:
        # A parameter given at run time was drawn outside its range on purpose: the execution is refused.
        assert request.expected.status == ErrorStatus.INVALID_ARGUMENT
        return
    if "index_out_of_range_input" in generated.features:
        # A batch index given at run time names no batch: the execution fails (the HAL names no status).
        assert request.expected.status in (ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT)
        return
    assert request.expected.status == ErrorStatus.NONE
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(request.expected.outputs, generated.outputs))


@_QUICK
@given(st.data())
def test_a_hypothesis_source_feeds_the_generators(data) -> None:
    generated = generate_model(HypothesisSource(data), ModelConfig(max_operations=1, control_flow=False))
    assert len(generated.model.main.operations) == 1


def test_examples_shrink_to_a_single_operation() -> None:
    # The smallest model with a quantized operand that Hypothesis finds is a single operation.
    smallest = find(
        models(ModelConfig(control_flow=False)),
        lambda g: "quantized" in g.features,
        # Every phase, shrinking included, whatever the active profile says (the ci profile does not shrink).
        settings=settings(database=None, max_examples=500, deadline=None, phases=list(Phase)),
    )
    assert len(smallest.model.main.operations) == 1
