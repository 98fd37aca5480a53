"""The differential target: one execution on several engines, a disagreement reported with the engines named (also
where the reference prescribes no values), agreeing engines passing, and an engine that does not run an operation
left out."""

from __future__ import annotations

import pytest

from driver_under_test import create_device, create_litert_device
from harness.gen import GenerationRejected, RandomSource
from harness.hal import ErrorStatus
from harness.targets import TARGETS
from harness.targets.differential import DifferentialTarget, engine_specs
from tests.engines.planted import add_case
from tests.targets.fakes import Delegating, WrapsPreparedModel, sync_shifts_first_output

ENGINES = {
    "numpy": "driver_under_test:create_device",
    "litert-reference": "driver_under_test:create_litert_reference_device",
    "onnxruntime-disabled": "driver_under_test:create_onnxruntime_disabled_device",
}


class RefusesEverything(Delegating):
    """Runs no operation (as an engine without a translation for them answers getSupportedOperations)."""

    def get_supported_operations(self, model):
        return ErrorStatus.NONE, [False] * len(model.main.operations)


@pytest.fixture(scope="module")
def target() -> DifferentialTarget:
    return DifferentialTarget(engines=ENGINES)


def test_engines_that_agree_give_no_finding_and_the_given_device_takes_its_variants_place(target) -> None:
    case = add_case()
    verdict = target.run(case, create_device())
    assert verdict.ok, verdict.details
    assert verdict.extras["engines"] == ["numpy", "litert-reference", "onnxruntime-disabled"]
    assert verdict.extras["left_out"] == {}
    case.close()


def test_a_perturbed_output_is_a_disagreement_naming_the_engines_and_their_values(target) -> None:
    case = add_case()  # out = a + b = [1..6] + [2, 3, 4, 5, 6, 2] = [[3, 5, 7], [9, 11, 8]]
    shifted = WrapsPreparedModel(create_device(), sync_shifts_first_output(1.0))
    verdict = target.run(case, shifted)
    assert not verdict.ok and verdict.rule == "engines.disagree", verdict.title
    assert verdict.title == (
        "engines disagree on output 0 (ADD, TENSOR_FLOAT32): device | numpy, litert-reference, onnxruntime-disabled"
    )
    assert "device: [2, 3] [4.0, 5.0, 7.0, 9.0, 11.0, 8.0]" in verdict.details  # the first one shifted by 1
    assert "numpy, litert-reference, onnxruntime-disabled: [2, 3] [3.0, 5.0, 7.0, 9.0, 11.0, 8.0]" in verdict.details
    assert "the reference ([2, 3] [3.0, 5.0, 7.0, 9.0, 11.0, 8.0]) agrees with numpy" in verdict.details
    assert verdict.locus == "ADD (device)" and verdict.extras["engines"][0] == "device"
    case.close()


def test_an_engine_that_does_not_run_an_operation_is_left_out() -> None:
    target = DifferentialTarget(engines={"litert-reference": ENGINES["litert-reference"]})
    case = add_case()
    verdict = target.run(case, RefusesEverything(create_device()))
    assert verdict.ok and verdict.extras["unsupported"]  # one engine left: nothing to compare
    assert verdict.extras["engines"] == ["litert-reference"]
    assert "does not run every operation" in verdict.extras["left_out"]["device"]
    target = DifferentialTarget(engines=ENGINES)
    shifted_and_refusing = RefusesEverything(WrapsPreparedModel(create_device(), sync_shifts_first_output(1.0)))
    verdict = target.run(case, shifted_and_refusing)
    assert verdict.ok and verdict.extras["engines"] == ["numpy", "litert-reference", "onnxruntime-disabled"]
    case.close()


def test_an_engine_that_is_not_installed_is_left_out_saying_so() -> None:
    target = DifferentialTarget(engines={**ENGINES, "missing": "no_such_engine_module:create_device"})
    case = add_case()
    verdict = target.run(case, create_litert_device(kernel_set="reference"))
    assert verdict.ok and "missing" in verdict.extras["left_out"]
    assert verdict.extras["left_out"]["missing"].startswith("not available:")
    case.close()


def test_the_engines_are_the_drivers_variants_or_those_chosen() -> None:
    every = engine_specs("driver_under_test:create_device", "")
    assert list(every)[:2] == ["numpy", "litert-optimized"] and "onnxruntime-disabled" in every
    assert engine_specs("driver_under_test:create_device", "numpy, onnxruntime-all") == {
        "numpy": "driver_under_test:create_device",
        "onnxruntime-all": "driver_under_test:create_onnxruntime_device",
    }
    with pytest.raises(ValueError, match=r"no engine tflite among the variants .* \(known: numpy, litert-optimized"):
        engine_specs("driver_under_test:create_device", "numpy,tflite")


def test_seeded_cases_run_on_every_engine_of_the_bundled_driver() -> None:
    target, compared = TARGETS["differential"], 0
    device = create_device()
    for seed in range(12):
        try:
            case = target.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        assert case.expect["insufficient"] == [] and case.execution["deadlineNs"] is None
        verdict = target.run(case, device)
        assert verdict.ok, f"seed {seed}: {verdict.title}\n{verdict.details}"
        compared = max(compared, len(verdict.extras["engines"]))
        case.close()
    assert compared == 8  # numpy, LiteRT's three kernel sets, ONNX Runtime's four levels


def test_a_model_the_reference_refuses_is_compared_on_no_engine(target) -> None:
    # A quant8 ADD with scale 0 breaks V4: whether a driver refuses it is the validation target's question.
    from harness.hal import OperandType

    case = add_case(OperandType.TENSOR_QUANT8_ASYMM, scale=0.0, zero_point=0)
    verdict = target.run(case, create_device())
    assert verdict.ok and verdict.extras["unsupported"]
    assert "scale" in verdict.extras["invalid"] and "engines" not in verdict.extras
    case.close()
