"""The oracle's rules: accuracy criteria for output values, verdicts, and the status, shape and timing rules.

The memory-domain rules and the oracle's model of a driver-managed buffer are in `harness.oracle.buffers`, imported
on its own (it needs the reference executor).
"""

from harness.oracle.accuracy import (
    Comparison,
    WorstElement,
    accuracy_class,
    compare,
    tolerance_for,
    within_tolerance,
)
from harness.oracle.rules import (
    Breach,
    Expectation,
    exception_verdict,
    hang_verdict,
    judge_execution,
    judge_model_rejected,
    judge_outputs,
    judge_preparation_rejected,
    judge_rejected_request,
    judge_supported_operations,
    judge_valid_preparation,
    verdict_of,
)
from harness.oracle.verdict import RULES, Outcome, Rule, RuleViolation, Verdict, define_rule

__all__ = [
    "RULES",
    "Comparison",
    "Expectation",
    "Breach",
    "Outcome",
    "Rule",
    "RuleViolation",
    "Verdict",
    "WorstElement",
    "accuracy_class",
    "compare",
    "define_rule",
    "exception_verdict",
    "hang_verdict",
    "judge_execution",
    "judge_model_rejected",
    "judge_outputs",
    "judge_preparation_rejected",
    "judge_rejected_request",
    "judge_supported_operations",
    "judge_valid_preparation",
    "tolerance_for",
    "verdict_of",
    "within_tolerance",
]
