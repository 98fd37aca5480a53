"""Judging engines against each other (engines.disagree): statuses first, then each output within the HAL's tolerance
of its type, the engines grouped by the values they gave."""

from __future__ import annotations

import numpy as np

from harness.hal import ErrorStatus
from harness.hal import OperandType as T
from harness.oracle.engines import ENGINES_DISAGREE, EngineAnswer, Outputs, judge_engines_agree

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
