"""The reference backend: conformance cases run on the reference executor."""

from __future__ import annotations

import traceback
from collections.abc import Sequence

import numpy as np

from harness.case import ConformanceCase
from harness.conformance.backend import Execution, Session, Stop
from harness.hal import ErrorStatus, Model
from harness.reference.executor import missing_kernels, run_model


class HarnessBug(Exception):
    """An exception escaped the reference implementation (not the driver)."""


class _ReferenceSession:
    def __init__(self, model: Model) -> None:
        self.model = model

    def execute(self, inputs: Sequence[np.ndarray | None], expected: Sequence[np.ndarray]) -> Execution:
        try:
            result = run_model(self.model, list(inputs))
        except Exception as exc:  # a catalogue bug: reported as the case's failure, not a crash of the run
            raise HarnessBug(traceback.format_exc()) from exc
        shapes = [list(o.shape) for o in result.outputs] if result.status == ErrorStatus.NONE else None
        return Execution(status=result.status, shapes=shapes, outputs=result.outputs, message=result.message)


class ReferenceBackend:
    """Runs cases on the reference executor."""

    name = "reference"

    def prepare(self, case: ConformanceCase) -> Session | Stop:
        """Skip cases using operations the catalogue has no kernel for."""
        missing = missing_kernels(case.model)
        if missing:
            return Stop("skipped", reason=f"no reference kernel: {missing[0]}")
        return _ReferenceSession(case.model)
