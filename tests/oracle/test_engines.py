"""Judging engines against each other (engines.disagree): statuses first, then each output within the HAL's tolerance
of its type, the engines grouped by the values they gave."""

from __future__ import annotations

import numpy as np

from harness.case.json_model import model_from_json
from harness.hal import ErrorStatus
from harness.hal import OperandType as T
from harness.oracle.divergences import label_apart
from harness.oracle.engines import (
    ENGINES_DISAGREE,
    EngineAnswer,
    Outputs,
    disagreement,
    explained_by,
    judge_engines_agree,
)
from harness.oracle.rules import verdict_of

NONE = ErrorStatus.NONE
F = T.TENSOR_FLOAT32


def _answer(*outputs: list) -> EngineAnswer:
    return EngineAnswer(NONE, tuple(np.asarray(o, np.float32) for o in outputs))


def test_answers_within_tolerance_agree_and_one_answer_alone_is_not_judged() -> None:
    outputs = Outputs([F], ["ADD"])
    answers = {"a": _answer([1.0, 2.0]), "b": _answer([1.0, 2.0 + 1e-7]), "c": _answer([1.0 + 1e-7, 2.0])}
    assert judge_engines_agree(answers, outputs) is None
    assert judge_engines_agree({"a": _answer([1.0])}, outputs) is None


def test_different_statuses_are_a_disagreement_naming_who_ended_how() -> None:
    answers = {"a": _answer([1.0]), "b": EngineAnswer(ErrorStatus.GENERAL_FAILURE), "c": _answer([5.0])}
    breach = judge_engines_agree(answers, Outputs([F], ["ADD"]))
    assert breach is not None and breach.rule == ENGINES_DISAGREE
    assert breach.title == "engines end the execution differently (a, c: NONE; b: GENERAL_FAILURE)"
    assert breach.locus == "status (b)"


def test_values_apart_are_grouped_by_engine_even_without_reference_values() -> None:
    answers = {"a": _answer([1.0, 2.0]), "b": _answer([1.0, 3.0]), "c": _answer([1.0, 2.0])}
    breach = judge_engines_agree(answers, Outputs([F], ["TANH"], reference=[None]))
    assert breach is not None and breach.output == 0
    assert breach.title == "engines disagree on output 0 (TANH, TENSOR_FLOAT32): a, c | b"
    assert "a, c: [2] [1.0, 2.0]" in breach.details and "b: [2] [1.0, 3.0]" in breach.details
    assert "worst at [1]: expected 2, actual 3" in breach.details
    assert "the reference prescribes no values for this output" in breach.details
    assert breach.locus == "TANH (b)"


def test_the_second_output_is_judged_when_the_first_agrees_and_the_reference_side_is_named() -> None:
    answers = {"a": _answer([1.0], [7.0]), "b": _answer([1.0], [8.0])}
    outputs = Outputs([F, F], ["ADD", "MUL"], reference=[np.float32([1.0]), np.float32([8.0])])
    breach = judge_engines_agree(answers, outputs)
    assert breach is not None and breach.output == 1 and "agrees with b" in breach.details


def test_outputs_the_hal_leaves_to_the_implementation_are_not_compared() -> None:
    """An LSTM's scratch buffer holds whatever each engine keeps there: only the outputs after it are judged."""
    answers = {"a": _answer([0.5, 0.1], [1.0]), "b": _answer([0.0, 0.0], [1.0])}
    outputs = Outputs([F, F], ["LSTM", "LSTM"], implementation_defined=frozenset({0}))
    assert judge_engines_agree(answers, outputs) is None
    answers["b"] = _answer([0.0, 0.0], [2.0])
    breach = judge_engines_agree(answers, outputs)
    assert breach is not None and breach.output == 1


def test_kernel_sets_of_one_engine_outvote_no_other_engine() -> None:
    answers = {"numpy": _answer([1.0]), "l1": _answer([2.0]), "l2": _answer([2.0]), "l3": _answer([2.0])}
    by_answers = disagreement(answers, Outputs([F], ["ADD"]))
    assert by_answers is not None and by_answers.apart == ("numpy",)
    families = {"numpy": "numpy", "l1": "litert", "l2": "litert", "l3": "litert"}
    by_engines = disagreement(answers, Outputs([F], ["ADD"]), families)
    assert by_engines is not None and by_engines.apart == ("l1", "l2", "l3")


# ---- disagreements a registered divergence explains ----


def _lrn_model():
    """A one-operation model whose output LOCAL_RESPONSE_NORMALIZATION writes."""
    x = {"type": "TENSOR_FLOAT32", "dimensions": [1, 1, 1, 4], "lifetime": "SUBGRAPH_INPUT"}
    out = {"type": "TENSOR_FLOAT32", "dimensions": [1, 1, 1, 4], "lifetime": "SUBGRAPH_OUTPUT"}

    def scalar(type_name: str, value: float) -> dict:
        return {"type": type_name, "dimensions": [], "lifetime": "CONSTANT_COPY", "value": [value]}

    params = [scalar("INT32", 1), scalar("FLOAT32", 1.0), scalar("FLOAT32", 1.0), scalar("FLOAT32", 0.5)]
    return model_from_json(
        {
            "operands": [x, *params, out],
            "operations": [{"type": "LOCAL_RESPONSE_NORMALIZATION", "inputs": [0, 1, 2, 3, 4], "outputs": [5]}],
            "inputIndexes": [0],
            "outputIndexes": [5],
        }
    )


def _disagreeing_on_lrn(apart: list[str]):
    names = dict.fromkeys(["numpy", "litert-optimized", "onnxruntime-all", *apart])
    values = {name: _answer([9.0] if name in apart else [1.0]) for name in names}
    found = disagreement(values, Outputs([F], ["LOCAL_RESPONSE_NORMALIZATION"], reference=[None]))
    assert found is not None and list(found.apart) == sorted(apart)
    return found, verdict_of([found.breach], "differential")


LITERT_REFERENCE = ("ai-edge-litert 2.3.0", "reference")
LITERT_OPTIMIZED = ("ai-edge-litert 2.3.0", "optimized")
ORT = ("onnxruntime 1.30.0", "all")


def test_engines_standing_apart_with_a_registered_divergence_are_labelled_with_it() -> None:
    found, verdict = _disagreeing_on_lrn(["litert-reference"])
    identities = {
        "numpy": None,
        "litert-optimized": LITERT_OPTIMIZED,
        "onnxruntime-all": ORT,
        "litert-reference": LITERT_REFERENCE,
    }
    labelled = label_apart(verdict, _lrn_model(), found.apart, identities, found.producer)
    assert labelled.extras["divergence"] == "litert-reference-lrn-window"


def test_a_disagreement_is_left_unlabelled_when_an_engine_apart_shows_no_divergence() -> None:
    # The driver's own kernels standing apart, or an engine variant the divergence does not cover.
    for apart, identity in (("numpy", None), ("litert-xnnpack", ("ai-edge-litert 2.3.0", "xnnpack"))):
        found, verdict = _disagreeing_on_lrn([apart])
        identities = {"numpy": None, "litert-optimized": LITERT_OPTIMIZED, "onnxruntime-all": ORT, apart: identity}
        labelled = label_apart(verdict, _lrn_model(), found.apart, identities, found.producer)
        assert "divergence" not in labelled.extras, apart


def test_two_engines_apart_each_with_its_own_divergence_are_labelled_with_both() -> None:
    # The baseline campaign's RELU6 at output scale 2^-36, zero point 128: LiteRT's upper bound overflows int32,
    # ONNX Runtime's optimizer drops the Clip; numpy and ONNX Runtime unoptimized give the HAL's values.
    q = {"type": "TENSOR_QUANT8_ASYMM", "dimensions": [2], "scale": 2.0**-36, "zeroPoint": 128}
    model = model_from_json(
        {
            "operands": [{**q, "lifetime": "SUBGRAPH_INPUT"}, {**q, "lifetime": "SUBGRAPH_OUTPUT"}],
            "operations": [{"type": "RELU6", "inputs": [0], "outputs": [1]}],
            "inputIndexes": [0],
            "outputIndexes": [1],
        }
    )
    litert = {f"litert-{k}": ("ai-edge-litert 2.3.0", k) for k in ("optimized", "xnnpack", "reference")}
    ort = {f"onnxruntime-{k}": ("onnxruntime 1.30.0", k) for k in ("all", "extended", "basic", "disabled")}
    identities = {"numpy": None, **litert, **ort}
    given = {"litert": [128, 128], "onnxruntime-all": [0, 157], "onnxruntime-extended": [0, 157]}
    values = {
        name: EngineAnswer(NONE, (np.asarray(given.get(name.split("-")[0], given.get(name, [128, 157])), np.uint8),))
        for name in identities
    }
    families = {name: identity[0] if identity else name for name, identity in identities.items()}
    found = disagreement(values, Outputs([T.TENSOR_QUANT8_ASYMM], ["RELU6"], reference=[None]), families)
    assert found is not None and set(found.apart) == {*litert, "onnxruntime-all", "onnxruntime-extended"}
    verdict = verdict_of([found.breach], "differential")
    labelled = label_apart(verdict, model, found.apart, identities, found.producer)
    assert labelled.extras["divergence"] == "litert-relu-bound-overflow, onnxruntime-clip-quant-fusion-epsilon"


def test_answers_in_the_span_of_the_reference_s_probed_runs_are_explained_element_by_element() -> None:
    # Three runs of a quant8 output (the reference, a rounding leaning down, one leaning up): an engine may take
    # either side element by element; one beyond the span by more than the tolerance is not explained.
    outputs = Outputs([T.TENSOR_QUANT8_ASYMM], ["MUL"], quantized_operations=1)
    runs = [(np.array([77, 10], np.uint8),), (np.array([76, 10], np.uint8),), (np.array([82, 12], np.uint8),)]

    def answers(*values) -> dict:
        return {f"e{k}": EngineAnswer(NONE, (np.array(v, np.uint8),)) for k, v in enumerate(values)}

    assert explained_by(runs, answers([77, 10], [82, 12], [80, 11]), 0, outputs)
    assert explained_by(runs, answers([83, 9]), 0, outputs)  # within the tolerance (1) of the span's ends
    assert not explained_by(runs, answers([77, 10], [90, 10]), 0, outputs)
