"""What the property tests share: drawing a case through a target with Hypothesis and running it. A verdict is
asserted with tests.verdicts.assert_passes, which says how to reproduce a failing one; on a device over an engine,
a failure that is a registered known divergence is labelled as such (harness.oracle.divergences)."""

from __future__ import annotations

from hypothesis import reject

from harness.case import Case
from harness.gen.source import GenerationRejected
from harness.gen.sources import HypothesisSource
from harness.hal import Device, EngineExport
from harness.oracle.divergences import label
from harness.oracle.verdict import Verdict
from harness.targets.base import Target


def draw_case(target: Target, data: object) -> Case:
    """A case decoded from Hypothesis choices (the example is rejected when generation is)."""
    try:
        return target.decode(HypothesisSource(data))
    except GenerationRejected:
        reject()


def judge(target: Target, data: object, device: Device) -> tuple[Verdict, Case]:
    """Draw a case and run it; a failure on an engine that is a known divergence comes back labelled."""
    case = draw_case(target, data)
    verdict = target.run(case, device)
    identity = device.engine_identity() if isinstance(device, EngineExport) else None
    return label(verdict, case.executed_model(), identity), case
