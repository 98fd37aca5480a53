"""The validation target on the structures a validator most easily gets wrong: valid ones the HAL allows (an IF
without data inputs, extensions declared and unused) and invalid ones (a subgraph without operations, a scale that
is not a number). The driver passes; a driver with the matching wrong rule is caught."""

from __future__ import annotations

import pytest

from driver_under_test import create_device
from harness.case import Case, Live
from harness.gen import ModelConfig, RandomSource, generate_model
from harness.gen.mutations import MUTATIONS, apply_mutation
from harness.gen.source import GenerationRejected
from harness.hal import ErrorStatus, Model, OperationType
from harness.oracle.verdict import Outcome
from harness.targets.validation import ValidationTarget
from tests.targets import fakes

SEEDS = range(120)
# Valid models only, with IF drawn often.
VALID = ValidationTarget(config=ModelConfig(control_flow_probability=0.5), kinds=("valid",))


@pytest.fixture(scope="module")
def device():
    return create_device(faults=[])


def _inputless_if(model: Model) -> bool:
    return any(op.type == OperationType.IF and len(op.inputs) == 3 for op in model.main.operations)


def _declares_extensions(model: Model) -> bool:
    return bool(model.extension_name_to_prefix)


def _verdicts(target: ValidationTarget, device, picks) -> tuple[int, list]:
    """(cases `picks` selects, their failing verdicts) over the seeds."""
    picked, failures = 0, []
    for seed in SEEDS:
        try:
            case = target.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        if picks(case.live.model):
            picked += 1
            verdict = target.run(case, device)
            if not verdict.ok:
                failures.append((seed, verdict.rule))
        case.close()
    return picked, failures


@pytest.mark.parametrize("shape", [_inputless_if, _declares_extensions], ids=["if_without_inputs", "extensions"])
def test_the_driver_accepts_the_valid_structures_and_a_driver_refusing_them_is_caught(device, shape) -> None:
    picked, failures = _verdicts(VALID, device, shape)
    assert picked > 0 and failures == []
    _, failures = _verdicts(VALID, fakes.RefusesWhen(device, shape), shape)
    assert failures and {rule for _, rule in failures} == {"status.valid_model_accepted"}


def _mutated_case(name: str, seed: int) -> Case:
    model = apply_mutation(MUTATIONS[name], generate_model(RandomSource(seed)).model, RandomSource(seed))
    expect = {"valid": False, "kind": "model", "mutation": name, "rule": MUTATIONS[name].v}
    return Case("validation", execution={"preference": 1, "priority": 1}, expect=expect, live=Live(model))


def _without_operations(model: Model) -> bool:
    return not model.main.operations


def _malformed_scale(model: Model) -> bool:
    return any(not isinstance(o.scale, float) for g in (model.main, *model.referenced) for o in g.operands)


@pytest.mark.parametrize(
    ("name", "wrong"),
    [
        ("every_operation_removed", lambda device: fakes.AcceptsWhen(device, _without_operations)),
        ("scale_not_a_number", lambda device: fakes.RefusesWhen(device, _malformed_scale, ErrorStatus.GENERAL_FAILURE)),
    ],
)
def test_the_driver_refuses_the_invalid_structures_and_a_driver_mishandling_them_is_caught(device, name, wrong) -> None:
    target = ValidationTarget()
    for seed in range(5):
        case = _mutated_case(name, seed)
        assert target.run(case, device).ok, seed
        verdict = target.run(case, wrong(device))
        assert (verdict.outcome, verdict.rule) == (Outcome.FAILURE, "status.invalid_model_rejected"), seed
        case.close()
