"""The targets' registry, the Atheris entry point and the Hypothesis profiles the suite runs under."""

from __future__ import annotations

import random

import pytest
from hypothesis import settings

from driver_under_test import create_device
from harness.gen.model import ModelConfig
from harness.hal import OperationType as Op
from harness.oracle.verdict import RuleViolation
from harness.targets import TARGETS, get_target, run_atheris_one
from harness.targets.base import register_target
from harness.targets.execution import ExecutionTarget
from tests.conftest import selected_profile


def test_every_target_is_registered_under_its_module_name() -> None:
    assert {"validation", "execution", "request"} <= set(TARGETS)
    for name in ("validation", "execution", "request"):
        assert get_target(name).name == name


def test_an_unknown_target_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="validation"):
        get_target("no-such-target")


def test_registering_a_name_twice_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="registered twice"):
        register_target(TARGETS["validation"])


def fuzzer_inputs(count: int, size: int = 300) -> list[bytes]:
    rng = random.Random(1234)
    return [rng.randbytes(size) for _ in range(count)]


def test_atheris_entry_returns_quietly_on_a_fault_free_driver() -> None:
    # Elementwise arithmetic only: the driver and the reference agree on it, whatever the fuzzer bytes.
    target = ExecutionTarget(model_config=ModelConfig().with_operations([Op.ADD, Op.MUL, Op.SUB]))
    device = create_device(faults=[])
    for data in [b"", b"\x00", *fuzzer_inputs(40)]:
        assert run_atheris_one(target, data, device) is None


def test_atheris_entry_raises_the_broken_rule() -> None:
    device = create_device(faults=["timing_when_not_asked"])
    raised = []
    for data in fuzzer_inputs(40):
        try:
            run_atheris_one(TARGETS["execution"], data, device)
        except RuleViolation as exc:
            raised.append(exc.verdict.rule)
    assert raised and set(raised) == {"timing.absent_unless_measured"}


@pytest.mark.parametrize(
    ("environ", "profile"),
    [({}, "dev"), ({"CI": "true"}, "ci"), ({"CI": "true", "HYPOTHESIS_PROFILE": "nightly"}, "nightly")],
)
def test_the_profile_follows_the_environment(environ: dict, profile: str) -> None:
    assert selected_profile(environ) == profile


def test_the_ci_profile_is_deterministic_and_keeps_no_database() -> None:
    ci = settings.get_profile("ci")
    assert ci.derandomize and ci.database is None and ci.deadline is None
    nightly, dev = settings.get_profile("nightly"), settings.get_profile("dev")
    assert nightly.max_examples > dev.max_examples >= ci.max_examples
