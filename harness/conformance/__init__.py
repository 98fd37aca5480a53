"""Conformance: the public test vectors run through the reference executor or a driver, judged by the oracle."""

from harness.conformance.report import CaseResult, ConformanceReport
from harness.conformance.runner import judge, load_cases, run_case, run_conformance

__all__ = ["CaseResult", "ConformanceReport", "judge", "load_cases", "run_case", "run_conformance"]
