"""What the property tests share: drawing a case through a target with Hypothesis and explaining a verdict."""

from __future__ import annotations

import json

from hypothesis import reject

from harness.gen.source import GenerationRejected
from harness.gen.sources import HypothesisSource
from harness.hal import Device
from harness.oracle.verdict import Verdict
from harness.targets.base import Case, Target

_CASE_TEXT_LIMIT = 6000
_CASE_KEYS = ("expect", "execution", "model", "request", "inputs", "extras")


def draw_case(target: Target, data: object) -> Case:
    """A case decoded from Hypothesis choices (the example is rejected when generation is)."""
    try:
        return target.decode(HypothesisSource(data))
    except GenerationRejected:
        reject()


def explain(verdict: Verdict, case: Case) -> str:
    """The failure message of a property: the verdict, then the case that produced it."""
    d = case.to_json()
    text = "\n".join(f"  {key}: {json.dumps(d[key], separators=(',', ':'))}" for key in _CASE_KEYS if d.get(key))
    if len(text) > _CASE_TEXT_LIMIT:
        text = text[:_CASE_TEXT_LIMIT] + "\n... (case truncated)"
    where = f" on {verdict.extras['path']}" if "path" in verdict.extras else ""
    return f"{verdict.outcome.value} [{verdict.rule}]{where}: {verdict.title}\n{verdict.details}\ncase:\n{text}"


def judge(target: Target, data: object, device: Device) -> tuple[Verdict, Case]:
    """Draw a case and run it."""
    case = draw_case(target, data)
    return target.run(case, device), case
