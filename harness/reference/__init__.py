"""The oracle's reference implementation: a reference validator and a reference executor built on harness.ops.

Shares no code with driver_under_test.
"""

from harness.reference.validator import (
    RULES,
    Rule,
    Violation,
    uncatalogued_operations,
    validate_fenced_request,
    validate_model,
    validate_preparation,
    validate_request,
)

__all__ = [
    "RULES",
    "Rule",
    "Violation",
    "uncatalogued_operations",
    "validate_fenced_request",
    "validate_model",
    "validate_preparation",
    "validate_request",
]

from harness.reference.executor import (  # noqa: E402  (appended: the executor's public names)
    NoKernelError,
    ReferenceResult,
    judge_output_sizes,
    missing_kernels,
    run_model,
)

__all__ += ["NoKernelError", "ReferenceResult", "judge_output_sizes", "missing_kernels", "run_model"]

from harness.reference._names import operation_name  # noqa: E402  (readable names for reports)

__all__ += ["operation_name"]
