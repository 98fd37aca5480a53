"""Classifying findings on an engine by differential re-runs: a planted engine whose "bad" kernel set gets ADD wrong
(or aborts) gives the class engine on that kernel set only, a reduction to the one operation, a signature that does
not depend on the graph around it, and an export whose repro.py shows the bug alone."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from harness.campaign.classify import Classification, classify
from harness.case import Case, inputs_to_json, model_from_json, simple_request_json
from harness.drivers import create_device
from harness.engines import engine_model_of, export_case
from harness.reduce import reduce_graph
from harness.runner import WorkerPool
from harness.targets import TARGETS
from tests.campaign import planted_engine

BAD = "tests.campaign.planted_engine:create_bad"
A = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)


def _operand(type_: str, dims: list[int], lifetime: str, **more: object) -> dict:
    return {"type": type_, "dimensions": dims, "scale": 0.0, "zeroPoint": 0, "lifetime": lifetime, **more}


def chain_case(ops: list[str]) -> dict:
    """An execution case: x, then each operation of `ops` (ADD, MUL or SUB) applied with x as its other input."""
    f, none = "TENSOR_FLOAT32", [0]
    operands = [_operand(f, [2, 2], "SUBGRAPH_INPUT"), _operand("INT32", [], "CONSTANT_COPY", value=none)]
    operations, last = [], 0
    for k, op in enumerate(ops):
        operands.append(_operand(f, [2, 2], "SUBGRAPH_OUTPUT" if k == len(ops) - 1 else "TEMPORARY_VARIABLE"))
        operations.append({"type": op, "inputs": [last, 0, 1], "outputs": [len(operands) - 1]})
        last = len(operands) - 1
    model_json = {"operands": operands, "operations": operations, "inputIndexes": [0], "outputIndexes": [last]}
    model = model_from_json(model_json)
    request = simple_request_json(model, [A], [16])
    execution = {"measure": False, "deadlineNs": None, "loopTimeoutNs": None}
    return Case("execution", model_json, request, inputs_to_json([A]), execution, {"valid": True}).to_json()


@pytest.fixture
def replay():
    """Replays in isolated workers, by driver spec (closed after the test)."""
    pools: dict[str, WorkerPool] = {}

    def run(spec: str, case: dict):
        pool = pools.setdefault(spec, WorkerPool(spec, [], 30.0))
        return pool.run(case["target"], case).verdict

    yield run
    for pool in pools.values():
        pool.close()


@pytest.fixture(autouse=True)
def planted_format():
    planted_engine.register()


def _verdict(case: dict, spec: str = BAD):
    c = Case.from_json(case)
    verdict = TARGETS["execution"].run(c, create_device(spec))
    c.close()
    return verdict


def _reduced(case: dict, verdict) -> dict:
    """The case reduced while it fails with the same outcome and rule, as the triage reduces engine findings."""
    return reduce_graph(
        case, lambda c: (lambda v: (v.outcome, v.rule) == (verdict.outcome, verdict.rule))(_verdict(c))
    ).case


def test_a_wrong_result_on_one_kernel_set_is_an_engine_bug_there_reduced_to_one_operation(replay) -> None:
    case = chain_case(["MUL", "ADD", "MUL"])
    verdict = _verdict(case)
    assert verdict.rule == "accuracy.float32"
    reduced = _reduced(case, verdict)
    assert [op["type"] for op in reduced["model"]["operations"]] == ["ADD"]
    found = classify(reduced, replay(BAD, reduced), BAD, replay)
    assert isinstance(found, Classification)
    assert (found.cls, found.kernel_sets, found.operation) == ("engine", ["bad"], "ADD"), found.reason
    assert found.replays == {"numpy": "passes", "planted-good": "passes", "planted-bad": "fails"}
    assert found.bare["good"].endswith("outputs match the reference") and "out of tolerance" in found.bare["bad"]


def test_one_bug_met_in_different_graphs_has_one_signature_and_other_operations_others(replay) -> None:
    signatures = set()
    for ops in (["ADD"], ["MUL", "ADD"]):
        case = chain_case(ops)
        verdict = replay(BAD, case)
        reduced = _reduced(case, verdict)
        signatures.add(classify(reduced, replay(BAD, reduced), BAD, replay).signature(verdict.outcome.value))
    assert len(signatures) == 1
    other = Classification("engine", "", "planted-bad", "planted-engine 1.0", ["bad"], operation="SUB")
    assert other.signature("FAILURE") not in signatures


def test_an_engine_that_aborts_on_one_kernel_set_is_an_engine_crash(replay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(planted_engine.ABORT, "1")
    case = chain_case(["ADD"])
    verdict = replay(BAD, case)
    assert verdict.outcome.value == "CRASH"
    found = classify(case, verdict, BAD, replay)
    assert (found.cls, found.kernel_sets) == ("engine", ["bad"]), found.reason
    assert "SIGABRT" in found.bare["bad"] and "crash" in found.reason


def test_the_export_of_an_engine_finding_reproduces_alone_on_its_kernel_set_only(tmp_path) -> None:
    case = Case.from_json(chain_case(["ADD"]))
    engine_model = engine_model_of(case, create_device(BAD))
    export = export_case(case, engine_model, tmp_path / "export")
    assert export.reproduces
    script = tmp_path / "export" / "repro.py"
    bad = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=os.environ)
    assert bad.returncode == 1 and "expected" in bad.stdout, bad.stdout + bad.stderr
    good = subprocess.run([sys.executable, str(script), "--kernels", "good"], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert good.returncode == 0, good.stdout + good.stderr
    case.close()


def test_a_driver_without_an_engine_is_not_classified(replay) -> None:
    case = chain_case(["ADD"])
    assert classify(case, replay("driver_under_test:create_device", case), "driver_under_test:create_device",
                    replay) is None  # fmt: skip


def test_a_known_onnx_runtime_divergence_is_classified_as_such(replay) -> None:
    from tests.engines.onnx_cases import ORT_EXTENDED, QDQ_S8, qdq_s8_case

    case = qdq_s8_case().to_json()
    verdict = replay(ORT_EXTENDED, case)
    assert not verdict.ok
    found = classify(case, verdict, ORT_EXTENDED, replay)
    assert (found.cls, found.divergence, found.kernel_sets) == ("divergence", QDQ_S8, ["all", "extended"])
    assert found.variant == "onnxruntime-extended" and found.engine.startswith("onnxruntime ")


def test_an_onnx_runtime_failure_on_the_levels_that_rewrite_qdq_only_is_an_engine_bug_there(
    replay, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.campaign import classify as module
    from tests.engines.onnx_cases import ORT_EXTENDED, qdq_s8_case

    # As if the divergence were not registered yet: the differential re-runs and the bare runs alone decide.
    monkeypatch.setattr(module, "label", lambda verdict, model, identity: verdict)
    case = qdq_s8_case().to_json()
    verdict = replay(ORT_EXTENDED, case)
    found = classify(case, verdict, ORT_EXTENDED, replay)
    assert (found.cls, found.kernel_sets, found.operation) == ("engine", ["all", "extended"], "FULLY_CONNECTED"), (
        found.reason
    )
    assert "wrong on all, extended and right on basic, disabled" in found.reason
    assert found.replays["numpy"] == "passes" and found.replays["onnxruntime-disabled"] == "passes"
    assert found.replays["onnxruntime-all"] == "fails" and found.replays["onnxruntime-extended"] == "fails"
    assert "does not match y_zero_point type UINT8" in found.bare["extended"]
    assert found.bare["basic"].endswith("outputs match the reference")


def test_a_variant_over_another_engine_failing_the_same_way_is_no_plumbing_evidence(
    replay, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A planted "other engine" variant that fails like the finding's: evidence kept, the class still the engine's.
    variants = {**planted_engine.VARIANTS, "other-engine": "tests.campaign.planted_engine:create_bad_elsewhere"}
    monkeypatch.setattr(planted_engine, "VARIANTS", variants)
    case = chain_case(["ADD"])
    found = classify(case, replay(BAD, case), BAD, replay)
    assert found.replays["other-engine"] == "fails"
    assert (found.cls, found.kernel_sets) == ("engine", ["bad"]), found.reason


def test_an_engine_without_an_adapter_is_unclassified_saying_so(replay, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.engines import adapter

    monkeypatch.delitem(adapter._ADAPTERS, planted_engine.FORMAT)
    case = chain_case(["ADD"])
    found = classify(case, replay(BAD, case), BAD, replay)
    assert found.cls == "unclassified" and found.kernel_sets == ["bad"]
    assert found.reason.startswith("the engine cannot be run bare: no engine adapter for format 'planted'")


def test_a_disagreement_between_engines_is_not_classified_again(replay) -> None:
    from harness.oracle.verdict import Outcome, Verdict

    disagreement = Verdict(Outcome.FAILURE, rule="engines.disagree", title="engines disagree", target="differential")
    assert classify(chain_case(["ADD"]), disagreement, BAD, replay) is None


def test_a_disagreement_marked_with_known_divergences_is_classified_as_them_on_any_driver() -> None:
    from harness.campaign.classify import classify_disagreement
    from harness.oracle.verdict import Outcome, Verdict

    marked = Verdict(
        Outcome.FAILURE,
        rule="engines.disagree",
        title="engines disagree",
        target="differential",
        locus="UNIDIRECTIONAL_SEQUENCE_LSTM (litert-optimized, litert-reference, litert-xnnpack)",
        extras={"divergence": "litert-lstm-activation-none"},
    )
    found = classify_disagreement(marked)
    assert found is not None and found.cls == "divergence" and found.divergence == "litert-lstm-activation-none"
    assert found.engine == "ai-edge-litert" and found.kernel_sets == ["optimized", "reference", "xnnpack"]
    assert found.operation == "UNIDIRECTIONAL_SEQUENCE_LSTM"
    unmarked = Verdict(Outcome.FAILURE, rule="engines.disagree", title="engines disagree", target="differential")
    assert classify_disagreement(unmarked) is None
