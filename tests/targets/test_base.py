"""The Case: its model JSON may be deferred (made on first read), and an attached model is handed over once."""

from __future__ import annotations

import dataclasses

from harness.targets.base import Case, DeferredJSON

MODEL = {"operands": [], "operations": [], "inputIndexes": [], "outputIndexes": []}


def _deferred(made: list[int]) -> DeferredJSON:
    def make() -> dict:
        made.append(1)
        return dict(MODEL)

    return DeferredJSON(make)


def test_a_deferred_json_is_made_on_first_read_and_only_once() -> None:
    made: list[int] = []
    case = Case("validation", _deferred(made))
    assert made == []
    assert case.model == MODEL
    assert case.model is case.model
    assert made == [1]


def test_a_case_with_deferred_json_serializes_and_compares_as_one_with_that_json() -> None:
    deferred = Case("validation", _deferred([]), expect={"valid": True})
    plain = Case("validation", dict(MODEL), expect={"valid": True})
    assert deferred.to_json() == plain.to_json()
    assert deferred.dumps() == plain.dumps()
    assert Case("validation", _deferred([])) == Case("validation", dict(MODEL))
    assert dataclasses.replace(Case("validation", _deferred([])), target="other").model == MODEL


def test_an_attached_model_survives_making_the_deferred_json() -> None:
    attached = object()
    case = Case("validation", _deferred([])).attach_model(attached)  # type: ignore[arg-type]
    assert case.model == MODEL
    assert case.take_model() is attached
    assert case.take_model() is None


def test_an_attached_model_is_not_handed_over_once_the_case_holds_other_json() -> None:
    for given in (_deferred([]), dict(MODEL)):
        case = Case("validation", given).attach_model(object())  # type: ignore[arg-type]
        case.model = dict(MODEL)
        assert case.take_model() is None
