"""A case's live objects: what the process that runs it holds, never serialized.

One shape for every target: the hal.Model (its pools are shared memory), the main input values, the request over
shared memory when the case executes, and the reference result once computed. Generation fills in what it already
computed (the model it built, the inputs it drew, the reference result it ran); a case read from JSON builds the
rest when it is first run (harness.case.Case.materialized).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.case.request import LiveRequest
from harness.hal import Model
from harness.reference import ReferenceResult


@dataclass(eq=False)
class Live:
    """A case's model, inputs, request and reference result in this process."""

    model: Model
    inputs: list[np.ndarray | None] = field(default_factory=list)  # stored dtype, actual shape; None = no value
    request: LiveRequest | None = None
    reference: ReferenceResult | None = None

    def close(self) -> None:
        """Release the request's memories and the model's pools."""
        if self.request is not None:
            self.request.close()
        close_model_pools(self.model)


def close_model_pools(model: Model) -> None:
    """Close the shared memories a model's CONSTANT_REFERENCE operands live in."""
    for pool in model.pools:
        close = getattr(pool, "close", None)
        if close is not None:
            close()
