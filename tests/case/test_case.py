"""The Case: a decoded case runs on the live objects generation built and gives the JSON those objects make; a case
read from JSON builds equal live objects; both round-trip through JSON unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from harness.case import Case, Live, model_from_json, model_to_json
from harness.gen import GenerationRejected, RandomSource, generate_model
from harness.targets import TARGETS

MODEL = {"operands": [], "operations": [], "inputIndexes": [], "outputIndexes": []}


def _decoded(target: str, seeds: range) -> list[Case]:
    cases = []
    for seed in seeds:
        try:
            cases.append(TARGETS[target].decode(RandomSource(seed)))
        except GenerationRejected:
            continue
    return cases


def test_a_case_needs_its_model_json_or_a_live_model() -> None:
    with pytest.raises(ValueError, match="model"):
        Case("validation")


def test_a_generated_case_makes_its_model_json_only_when_read() -> None:
    generated = generate_model(RandomSource(5))
    case = Case("validation", live=Live(generated.model, generated.inputs))
    assert case._model is None  # nothing made while the case only runs
    assert case.model == model_to_json(generated.model)
    assert case.model is case.model
    case.close()


@pytest.mark.parametrize("target", ["validation", "execution", "request"])
def test_decoded_cases_replay_from_their_json_as_they_ran(target: str) -> None:
    for case in _decoded(target, range(60)):
        text = case.dumps()
        live = case.materialized()
        again = Case.from_json(case.to_json())
        assert again == case and again.dumps() == text
        rebuilt = again.materialized()
        # What ran is what the JSON replays: the same model JSON, input values and request layout.
        assert model_to_json(rebuilt.model) == model_to_json(live.model)
        for a, b in zip(rebuilt.inputs, live.inputs, strict=True):
            assert (a is None) == (b is None) and (a is None or np.array_equal(a, b, equal_nan=True))
        if case.request is not None:
            assert rebuilt.request is not None and live.request is not None
            assert [m.read(0, m.size) for m in rebuilt.request.memories] == [
                m.read(0, m.size) for m in live.request.memories
            ]
        again.close()
        case.close()


def test_the_reference_runs_once_per_case() -> None:
    case = _decoded("execution", range(3))[0]
    assert case.live is not None and case.live.reference is not None  # generation computed it
    first = case.reference()
    assert case.reference() is first
    read = Case.from_json(case.to_json())
    assert read.reference() is read.reference()
    assert [np.shape(o) for o in read.reference().outputs] == [np.shape(o) for o in first.outputs]
    read.close()
    case.close()


def test_a_closed_case_keeps_the_json_read_before_and_refuses_to_make_more() -> None:
    generated = generate_model(RandomSource(7))
    case = Case("validation", live=Live(generated.model))
    model_json = case.model
    case.close()
    assert case.model == model_json and case.live is None
    unread = Case("validation", live=Live(generate_model(RandomSource(8)).model))
    unread.close()
    with pytest.raises(RuntimeError, match="closed"):
        _ = unread.model


def test_replace_gives_a_case_of_the_changed_json() -> None:
    case = Case("validation", dict(MODEL), expect={"valid": True})
    other = case.replace(target="other", extras={"x": 1})
    assert other.target == "other" and other.extras == {"x": 1} and other.model == MODEL
    assert case.target == "validation" and case.extras == {}
    assert model_from_json(other.model).main.operations == []


def test_another_format_version_is_refused() -> None:
    with pytest.raises(ValueError, match="version"):
        Case.from_json({"target": "validation", "model": MODEL, "version": 99})


def test_the_executed_model_omits_the_inputs_the_request_gives_no_value() -> None:
    def operand(lifetime: str) -> dict:
        return {"type": "TENSOR_FLOAT32", "dimensions": [2], "lifetime": lifetime}

    model = {
        "operands": [operand("SUBGRAPH_INPUT"), operand("SUBGRAPH_INPUT"), operand("SUBGRAPH_OUTPUT")],
        "operations": [{"type": "MAXIMUM", "inputs": [0, 1], "outputs": [2]}],
        "inputIndexes": [0, 1],
        "outputIndexes": [2],
    }
    argument = {"hasNoValue": False, "poolIndex": 0, "offset": 0, "length": 8, "dimensions": [2]}
    request = {
        "pools": [{"kind": "ashmem", "size": 24}],
        "inputs": [argument, {**argument, "hasNoValue": True, "length": 0}],
        "outputs": [{**argument, "offset": 16}],
    }
    inputs = [{"dimensions": [2], "value": [1.0, 2.0]}, {"noValue": True}]
    case = Case("execution", model=model, inputs=inputs, request=request)
    executed = case.executed_model()
    assert [o.lifetime.name for o in executed.main.operands] == ["SUBGRAPH_INPUT", "NO_VALUE", "SUBGRAPH_OUTPUT"]
    assert executed.main.input_indexes == [0]
    assert case.materialized().model.main.input_indexes == [0, 1]  # the case's own model is left as it is
    whole = Case("execution", model=model, inputs=[inputs[0], inputs[0]], request={**request, "inputs": [argument] * 2})
    assert whole.executed_model() is whole.materialized().model
    case.close()
    whole.close()
