"""Hunting on one driver: seeded random cases until one fails or a time budget is spent, and whether a failing
case is the driver's own (it passes on a reference driver, e.g. the fault-free one)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from harness.runner.pool import FailedCase, WorkerPool

BATCH_S = 1.0  # how often the worker reports back (a progress callback each time)
_BATCH_COUNT = 1_000_000  # seeds per batch: the batch's time ends it first


class Hunt:
    """Seeded cases on one pool until one fails or the budget is spent; resumable after a failing case."""

    def __init__(
        self,
        pool: WorkerPool,
        targets: Sequence[str],
        budget_s: float,
        batch_s: float = BATCH_S,
        on_batch: Callable[[Hunt], None] = lambda hunt: None,
    ) -> None:
        self.pool, self.targets, self.budget_s, self.batch_s, self.on_batch = pool, targets, budget_s, batch_s, on_batch
        self.seed = 0
        self.spent = 0.0  # seconds of running cases (worker start-ups excluded)
        self.cases = 0
        self.rejected = 0

    def next_failure(self) -> FailedCase | None:
        """Run until a case fails (returned) or the budget is spent (None)."""
        while self.spent < self.budget_s:
            self.pool.start()
            seconds = min(self.batch_s, self.budget_s - self.spent)
            began = time.perf_counter()
            batch = self.pool.run_random(self.targets, self.seed, _BATCH_COUNT, seconds)
            self.spent += time.perf_counter() - began
            self.seed += batch.attempted
            self.cases += batch.attempted - batch.rejected
            self.rejected += batch.rejected
            self.on_batch(self)
            if batch.failed is not None:
                return batch.failed
        return None


def passes_on(reference: WorkerPool, target_ref: str, failed: FailedCase) -> bool:
    """True if the failing case passes on the reference pool's driver (so what differs is what made it fail)."""
    if failed.case is None:
        return False
    return reference.run(target_ref, failed.case).verdict.ok
