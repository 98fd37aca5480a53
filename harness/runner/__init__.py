"""Running cases: in-process, or isolated in worker processes with time limits; SUCCESS / FAILURE / HANG / CRASH."""

from harness.runner.execute import (
    Judged,
    UnknownTarget,
    decode_bytes,
    decode_seed,
    registered_targets,
    resolve_target,
    run_case,
    verdict_from_json,
)
from harness.runner.pool import (
    DEFAULT_TIMEOUT_S,
    BatchResult,
    FailedCase,
    RunResult,
    WorkerPool,
    WorkerStartError,
    run_isolated,
)

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "BatchResult",
    "FailedCase",
    "Judged",
    "RunResult",
    "UnknownTarget",
    "WorkerPool",
    "WorkerStartError",
    "decode_bytes",
    "decode_seed",
    "registered_targets",
    "resolve_target",
    "run_case",
    "run_isolated",
    "verdict_from_json",
]
