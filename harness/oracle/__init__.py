"""The oracle's rules: accuracy criteria for output values (and, as they arrive, status and shape rules)."""

from harness.oracle.accuracy import Comparison, WorstElement, accuracy_class, compare, tolerance_for

__all__ = ["Comparison", "WorstElement", "accuracy_class", "compare", "tolerance_for"]
