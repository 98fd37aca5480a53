"""The reference validator on the public conformance models: it accepts every one of them (they are valid by
construction: the public test suites run them), and single mutations of them are rejected."""

from __future__ import annotations

import copy
from collections import Counter

import pytest

from harness.case import model_from_json
from harness.case.conformance import iter_vector_json, normalize_vector_model
from harness.hal import Model
from harness.hal import OperationType as Op
from harness.reference import uncatalogued_operations, validate_model


@pytest.fixture(scope="module")
def conformance_models() -> list[tuple[str, Model]]:
    """(case name, model) for every vector of every conformance file."""
    return [(d["name"], model_from_json(normalize_vector_model(d["model"]))) for d, _ in iter_vector_json()]


def test_the_conformance_set_is_complete(conformance_models: list[tuple[str, Model]]) -> None:
    assert len(conformance_models) == 4156  # 310 + 364 + 3482, per shared/conformance/README.md


def test_every_operation_of_the_conformance_models_is_catalogued(conformance_models: list[tuple[str, Model]]) -> None:
    # Without a catalogue entry the validator cannot check an operation's signature.
    missing: Counter[str] = Counter()
    for _, model in conformance_models:
        missing.update(Op(t).name for t in uncatalogued_operations(model))
    assert not missing, f"{len(missing)} operations have no signatures in harness.ops: " + ", ".join(
        f"{name} ({n} models)" for name, n in sorted(missing.items())
    )


def test_validator_accepts_every_conformance_model(conformance_models: list[tuple[str, Model]]) -> None:
    rejected = [(name, found) for name, model in conformance_models if (found := validate_model(model))]
    detail = "\n".join(f"{name}: {v.rule}: {v.message}" for name, found in rejected[:20] for v in found[:2])
    assert not rejected, f"{len(rejected)} of {len(conformance_models)} valid models rejected:\n{detail}"


def _sample(models: list[tuple[str, Model]]) -> list[tuple[str, Model]]:
    # Every 7th model: all operation families, a fraction of the time.
    return models[::7]


def test_a_wrong_consumer_count_is_found_in_any_model(conformance_models: list[tuple[str, Model]]) -> None:
    missed = []
    for name, model in _sample(conformance_models):
        mutated = copy.deepcopy(model)
        mutated.main.operands[0].number_of_consumers += 1
        if "model.operand.consumers" not in {v.rule for v in validate_model(mutated)}:
            missed.append(name)
    assert missed == []


def test_removing_the_last_operation_leaves_an_output_unwritten(conformance_models: list[tuple[str, Model]]) -> None:
    missed = []
    for name, model in _sample(conformance_models):
        mutated = copy.deepcopy(model)
        mutated.main.operations.pop()
        rules = {v.rule for v in validate_model(mutated)}
        # A one-operation model becomes empty; a longer one leaves the last operation's outputs unwritten.
        if not rules & {"model.operand.never_written", "model.subgraph.empty"}:
            missed.append(name)
    assert missed == []


def test_an_out_of_range_operand_type_is_found_in_any_model(conformance_models: list[tuple[str, Model]]) -> None:
    missed = []
    for name, model in _sample(conformance_models):
        mutated = copy.deepcopy(model)
        mutated.main.operands[mutated.main.input_indexes[0]].type = 16
        if {v.rule for v in validate_model(mutated)} != {"model.operand.type"}:
            missed.append(name)
    assert missed == []
