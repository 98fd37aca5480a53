"""Conformance results: one CaseResult per case, gathered into a report with JSON and terminal forms."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
OUTCOMES = (PASSED, FAILED, SKIPPED)


@dataclass(frozen=True)
class CaseResult:
    """How one conformance case ended: passed, failed (with the rule broken) or skipped (with the reason)."""

    name: str
    file: str
    operation: str
    outcome: str
    rule: str = ""
    detail: str = ""
    worst: dict[str, Any] | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}")
        if self.outcome == FAILED and not self.rule:
            raise ValueError(f"failed case {self.name} carries no rule")
        if self.outcome == SKIPPED and not self.reason:
            raise ValueError(f"skipped case {self.name} carries no reason")

    def describe(self) -> str:
        """One line for the terminal."""
        if self.outcome == FAILED:
            return f"FAILED {self.name} [{self.rule}] {self.detail}"
        if self.outcome == SKIPPED:
            return f"skipped {self.name}: {self.reason}"
        return f"passed {self.name}"


def _counts() -> dict[str, int]:
    return {outcome: 0 for outcome in OUTCOMES}


@dataclass
class ConformanceReport:
    """Every case's result for one target (the reference or a driver spec)."""

    target: str = "reference"
    results: list[CaseResult] = field(default_factory=list)

    def add(self, result: CaseResult) -> None:
        """Record one case's result."""
        self.results.append(result)

    def count(self, outcome: str) -> int:
        """Number of cases with this outcome."""
        return sum(1 for r in self.results if r.outcome == outcome)

    @property
    def passed(self) -> int:
        """Cases that passed."""
        return self.count(PASSED)

    @property
    def failed(self) -> int:
        """Cases that failed."""
        return self.count(FAILED)

    @property
    def skipped(self) -> int:
        """Cases that were skipped."""
        return self.count(SKIPPED)

    def _grouped(self, key: str) -> dict[str, dict[str, int]]:
        groups: dict[str, dict[str, int]] = {}
        for result in self.results:
            groups.setdefault(getattr(result, key), _counts())[result.outcome] += 1
        return dict(sorted(groups.items()))

    def by_operation(self) -> dict[str, dict[str, int]]:
        """Outcome counts per operation."""
        return self._grouped("operation")

    def by_file(self) -> dict[str, dict[str, int]]:
        """Outcome counts per vector file."""
        return self._grouped("file")

    def skipped_reasons(self) -> dict[str, int]:
        """How many cases were skipped for each reason, most frequent first."""
        return dict(Counter(r.reason for r in self.results if r.outcome == SKIPPED).most_common())

    def to_json(self) -> dict[str, Any]:
        """The machine-readable report."""
        return {
            "target": self.target,
            "total": len(self.results),
            "passed": self.passed,
            "failed": self.failed,
            "skipped": self.skipped,
            "by_operation": self.by_operation(),
            "by_file": self.by_file(),
            "failures": [
                {"name": r.name, "rule": r.rule, "detail": r.detail, "worst": r.worst}
                for r in self.results
                if r.outcome == FAILED
            ],
            "skipped_reasons": self.skipped_reasons(),
            "skips": [{"name": r.name, "reason": r.reason} for r in self.results if r.outcome == SKIPPED],
        }

    def summary(self) -> str:
        """One line: totals."""
        return (
            f"{self.target}: {len(self.results)} cases, {self.passed} passed, {self.failed} failed, "
            f"{self.skipped} skipped"
        )

    def format_table(self) -> str:
        """A per-operation table (passed / failed / skipped with reasons) followed by the per-file totals."""
        reasons: dict[str, Counter] = {}
        for r in self.results:
            if r.outcome == SKIPPED:
                reasons.setdefault(r.operation, Counter())[r.reason] += 1
        rows = [("operation", "passed", "failed", "skipped", "skip reasons")]
        for op, counts in self.by_operation().items():
            why = "; ".join(f"{reason} ({n})" for reason, n in reasons.get(op, Counter()).most_common())
            rows.append((op, str(counts[PASSED]), str(counts[FAILED]), str(counts[SKIPPED]), why))
        for file, counts in self.by_file().items():
            rows.append((f"[{file}]", str(counts[PASSED]), str(counts[FAILED]), str(counts[SKIPPED]), ""))
        rows.append(("total", str(self.passed), str(self.failed), str(self.skipped), ""))
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines = []
        for row in rows:
            cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in range(1, 4)] + [row[4]]
            lines.append("  ".join(cells).rstrip())
        return "\n".join(lines)

    def format_failures(self, limit: int = 50) -> str:
        """The first `limit` failures, one line each."""
        failures = [r for r in self.results if r.outcome == FAILED]
        lines = [r.describe() for r in failures[:limit]]
        if len(failures) > limit:
            lines.append(f"... and {len(failures) - limit} more failures (see the JSON report)")
        return "\n".join(lines)
