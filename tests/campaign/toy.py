"""A toy driver and target for the campaign's tests: fast to fuzz, with planted bugs found in seconds.

The driver adds numbers (`toy_sum`); the target checks the sum against its own. Faults: `sum_wraps` returns the
sum modulo 256 when the first of at least three values is 7 (many inputs, one bug: one signature);
`abort_on_ab` kills the process when the values start with 0xAB, 0xCD.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from harness.case import Case
from harness.oracle.verdict import SUCCESS, Outcome, Verdict, define_rule
from tests.runner.bad_drivers import StubDevice

SUM_RULE = define_rule("toy.sum_matches", "the toy driver's sum equals the sum of the values")
FAULTS = ("sum_wraps", "abort_on_ab")
SPEC = "tests.campaign.toy:create_device"
TARGET_REF = "tests.campaign.toy:TARGET"


class ToyDevice(StubDevice):
    """A stub device that can also add numbers."""

    def __init__(self, faults: Iterable[str] = ()) -> None:
        self.faults = frozenset(faults or ())
        unknown = self.faults - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown toy faults {sorted(unknown)}")

    def toy_sum(self, values: list[int]) -> int:
        """The sum of the values (unless a fault says otherwise)."""
        total = 0
        for v in values:
            total += v
        if "sum_wraps" in self.faults and len(values) >= 3 and values[0] == 7:
            return total % 256
        if "abort_on_ab" in self.faults and values[:2] == [0xAB, 0xCD]:
            os.abort()
        return total


def create_device(faults: Iterable[str] | None = None) -> ToyDevice:
    """The toy driver's factory."""
    return ToyDevice(faults or ())


class SumTarget:
    """Draws up to eight bytes and checks the device's sum of them."""

    name = "toy_sum"

    def decode(self, source) -> Case:
        count = source.integer(0, 8)
        return Case(self.name, model={}, extras={"values": [source.integer(0, 255) for _ in range(count)]})

    def run(self, case: Case, device: ToyDevice) -> Verdict:
        values = list(case.extras["values"])
        expected, actual = sum(values), device.toy_sum(values)
        if actual != expected:
            return Verdict(Outcome.FAILURE, SUM_RULE, "toy_sum is wrong", f"expected {expected}, got {actual}")
        return SUCCESS


TARGET = SumTarget()
