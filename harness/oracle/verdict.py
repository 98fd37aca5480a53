"""Verdicts and the registry of oracle rules.

A rule is named as a claim that must hold (`invalid_model_rejected`, `outputs_match_reference`); its id is what a
finding, a report and a regression test share. Defining a rule id twice is an error at import time.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum


class Outcome(StrEnum):
    """How one case ended."""

    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"  # the driver broke a rule
    HANG = "HANG"  # no answer within the time limit
    CRASH = "CRASH"  # the process running the driver died


@dataclass(frozen=True)
class Rule:
    """An oracle rule: a stable id and the claim it checks."""

    id: str
    claim: str


RULES: dict[str, Rule] = {}


def define_rule(rule_id: str, claim: str) -> str:
    """Register a rule; returns its id. A duplicate id is an error."""
    if rule_id in RULES:
        raise RuntimeError(f"oracle rule {rule_id!r} defined twice")
    RULES[rule_id] = Rule(rule_id, claim)
    return rule_id


# Rules every target shares; target-specific rules are defined next to the target.
NO_EXCEPTION_ESCAPES = define_rule("driver.no_exception_escapes", "no exception escapes the HAL interface")
DRIVER_ANSWERS = define_rule("driver.answers_in_time", "the driver answers every call within the time limit")
DRIVER_SURVIVES = define_rule("driver.process_survives", "no input makes the driver's process die")


@dataclass
class Verdict:
    """The judgement of one case."""

    outcome: Outcome
    rule: str | None = None  # the rule broken; None only for SUCCESS
    title: str = ""
    details: str = ""
    target: str = ""
    frames: tuple[str, ...] = ()  # top driver frames (file:function) of a traceback, when there is one
    extras: dict = field(default_factory=dict)
    # Where in the input the rule broke, for findings without frames (an accuracy failure names the operation
    # writing the failing output): without it, every wrong value of one type would be one finding.
    locus: str = ""

    def __post_init__(self) -> None:
        if self.outcome != Outcome.SUCCESS and not self.rule:
            raise ValueError(f"a {self.outcome.value} verdict must name the rule it broke")

    @property
    def ok(self) -> bool:
        """True for SUCCESS."""
        return self.outcome == Outcome.SUCCESS

    @property
    def signature(self) -> str:
        """Deduplication key: outcome, rule and the top driver frames (the locus when there are none)."""
        parts = [self.outcome.value, self.rule or "", *self.frames[:3]]
        if self.locus and not self.frames:
            parts.append(f"locus={self.locus}")
        key = "|".join(parts)
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    def to_json(self) -> dict:
        """A JSON-ready dict."""
        return {
            "outcome": self.outcome.value,
            "rule": self.rule,
            "title": self.title,
            "details": self.details,
            "target": self.target,
            "frames": list(self.frames),
            "signature": self.signature,
            "extras": self.extras,
            "locus": self.locus,
        }


SUCCESS = Verdict(Outcome.SUCCESS)


class RuleViolation(AssertionError):
    """Raised by a target run under a fuzzer: carries the verdict of a broken rule."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(f"[{verdict.rule}] {verdict.title}: {verdict.details}")
        self.verdict = verdict
