"""The interface between the conformance runner and what a case runs on (the reference or a driver).

A backend prepares a case (or says why it cannot: a Stop) and then executes examples, returning the raw outcome
(status, output shapes, output values) for the runner to judge. Backends judge nothing themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from harness.case import ConformanceCase
from harness.hal import ErrorStatus


@dataclass
class Execution:
    """What one execution of an example produced."""

    status: ErrorStatus
    shapes: list[list[int]] | None = None  # reported (driver) or actual (reference) output dimensions
    insufficient: list[int] = field(default_factory=list)  # outputs reported isSufficient = false
    outputs: list[np.ndarray] = field(default_factory=list)
    message: str = ""


@dataclass
class Stop:
    """A case ends before execution: skipped with a reason, or failed with a rule."""

    outcome: str  # "skipped" | "failed"
    reason: str = ""  # skipped
    rule: str = ""  # failed
    detail: str = ""


class Session(Protocol):
    """A prepared case that can execute its examples."""

    def execute(self, inputs: Sequence[np.ndarray | None], expected: Sequence[np.ndarray]) -> Execution:
        """Run one example; `expected` tells the output buffer sizes a client would allocate."""


class Backend(Protocol):
    """Prepares conformance cases."""

    name: str

    def prepare(self, case: ConformanceCase) -> Session | Stop:
        """A session for the case, or why it does not run."""
