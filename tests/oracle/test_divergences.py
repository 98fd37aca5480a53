"""The registry of known divergences: each entry's example shows the divergence on exactly the kernel sets the
entry names (and passes on the others), and the entry matches what it shows."""

from __future__ import annotations

import numpy as np
import pytest

from harness.case import Case, inputs_from_json, model_from_json, simple_request_json
from harness.drivers import create_device, variants
from harness.hal import element_size
from harness.oracle.divergences import DIVERGENCES, Divergence, Sighting, matching
from harness.reference import run_model
from harness.targets import TARGETS

DRIVER = "driver_under_test:create_device"


def example_case(divergence: Divergence) -> Case:
    """The execution target's case of an entry's example (a plain request sized by the reference's outputs)."""
    model_json, inputs_json = divergence.example["model"], divergence.example["inputs"]
    model = model_from_json(model_json)
    inputs = inputs_from_json(inputs_json, model)
    outputs = run_model(model, inputs).outputs
    main = model.main
    sizes = [element_size(main.operands[i].type) * int(np.size(o)) for i, o in zip(main.output_indexes, outputs)]
    request = simple_request_json(model, inputs, sizes)
    execution = {"measure": False, "deadlineNs": None, "loopTimeoutNs": None}
    return Case("execution", model_json, request, inputs_json, execution, {"valid": True, "insufficient": []})


def engine_variants(engine: str) -> dict[str, str]:
    """Kernel set -> driver spec of the bundled driver's variants over this engine."""
    found = {}
    for spec in variants(DRIVER).values():
        identity = create_device(spec).engine_identity()
        if identity is not None and identity[0].split()[0] == engine:
            found[identity[1]] = spec
    return found


@pytest.mark.parametrize("entry", sorted(DIVERGENCES))
def test_each_divergence_shows_on_its_kernel_sets_only_and_matches_what_it_shows(entry: str) -> None:
    divergence = DIVERGENCES[entry]
    kernel_sets = engine_variants(divergence.engine)
    assert divergence.kernel_sets <= set(kernel_sets), "the entry names kernel sets the engine does not have"
    for kernel_set, spec in sorted(kernel_sets.items()):
        case = example_case(divergence)
        verdict = TARGETS["execution"].run(case, create_device(spec))
        if kernel_set in divergence.kernel_sets:
            assert not verdict.ok, f"{entry} no longer shows on {kernel_set}: update the registry"
            sighting = Sighting(divergence.engine, kernel_set, case.materialized().model, verdict)
            assert matching(sighting) is divergence, (kernel_set, verdict.rule, verdict.title)
        else:
            assert verdict.ok, (kernel_set, verdict.rule, verdict.title)
        case.close()


def test_a_sighting_of_another_engine_or_kernel_set_matches_nothing() -> None:
    divergence = DIVERGENCES["litert-reference-lrn-window"]
    case = example_case(divergence)
    verdict = TARGETS["execution"].run(case, create_device("driver_under_test:create_litert_reference_device"))
    model = case.materialized().model
    assert matching(Sighting("ai-edge-litert", "reference", model, verdict)) is divergence
    assert matching(Sighting("ai-edge-litert", "optimized", model, verdict)) is None
    assert matching(Sighting("onnxruntime", "reference", model, verdict)) is None
    case.close()


def test_registering_an_id_twice_is_an_error() -> None:
    from harness.oracle.divergences import register

    with pytest.raises(RuntimeError, match="twice"):
        register(DIVERGENCES["litert-reference-no-elu"])


def test_wrong_values_downstream_of_a_divergent_operation_show_that_divergence() -> None:
    from harness.oracle.verdict import Outcome, Verdict

    divergence = DIVERGENCES["litert-reference-lrn-window"]
    model_json = {**divergence.example["model"]}
    operands = [dict(o) for o in model_json["operands"]]
    lrn_out = model_json["outputIndexes"][0]
    operands[lrn_out]["lifetime"] = "TEMPORARY_VARIABLE"
    operands.append({**operands[lrn_out], "lifetime": "SUBGRAPH_OUTPUT"})
    abs_op = {"type": "ABS", "inputs": [lrn_out], "outputs": [len(operands) - 1]}
    model_json.update(
        operands=operands, operations=[*model_json["operations"], abs_op], outputIndexes=[len(operands) - 1]
    )
    wrong_abs = Verdict(Outcome.FAILURE, rule="accuracy.float32", title="output 0 differs", locus="ABS")
    assert matching(Sighting("ai-edge-litert", "reference", model_from_json(model_json), wrong_abs)) is divergence
    alone = {**model_json, "operations": [abs_op], "inputIndexes": [lrn_out]}
    alone["operands"] = [{**o, "lifetime": "SUBGRAPH_INPUT"} if k == lrn_out else o for k, o in enumerate(operands)]
    assert matching(Sighting("ai-edge-litert", "reference", model_from_json(alone), wrong_abs)) is None
