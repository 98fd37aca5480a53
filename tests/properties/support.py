"""What the property tests share: drawing a case through a target with Hypothesis and running it. A verdict is
asserted with tests.verdicts.assert_passes, which says how to reproduce a failing one."""

from __future__ import annotations

from hypothesis import reject

from harness.gen.source import GenerationRejected
from harness.gen.sources import HypothesisSource
from harness.hal import Device
from harness.oracle.verdict import Verdict
from harness.targets.base import Case, Target


def draw_case(target: Target, data: object) -> Case:
    """A case decoded from Hypothesis choices (the example is rejected when generation is)."""
    try:
        return target.decode(HypothesisSource(data))
    except GenerationRejected:
        reject()


def judge(target: Target, data: object, device: Device) -> tuple[Verdict, Case]:
    """Draw a case and run it."""
    case = draw_case(target, data)
    return target.run(case, device), case
