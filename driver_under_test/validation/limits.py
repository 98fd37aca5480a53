"""The driver's resource limits: sizes refused with RESOURCE_EXHAUSTED_PERSISTENT instead of exhausting memory."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus


@dataclass(frozen=True)
class Limits:
    """Largest model and request the driver accepts (D26)."""

    max_operands: int = 10_000  # over all subgraphs of a model
    max_operations: int = 5_000  # over all subgraphs of a model
    max_rank: int = 6
    max_elements_per_operand: int = 2**26
    max_total_constant_bytes: int = 1 << 30
    max_subgraphs: int = 64  # main plus referenced
    max_request_args: int = 1024  # per list: inputs, outputs, pools


def exhausted(name: str, message: str) -> DriverError:
    """A RESOURCE_EXHAUSTED_PERSISTENT error for the limit `name` (a Limits field)."""
    return DriverError(ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT, message, f"limits.{name}")


def check_limit(limits: Limits, name: str, value: int, what: str) -> None:
    """Refuse `value` if it is above the limit `name`."""
    bound = getattr(limits, name)
    if value > bound:
        raise exhausted(name, f"{what} is {value}, above this driver's limit of {bound}")


def bounded_element_count(dimensions: Iterable[int], limits: Limits, what: str) -> int:
    """Product of the known (non-zero) dimensions, refused as soon as it passes max_elements_per_operand."""
    # Multiplying step by step and stopping early keeps a fuzzed 2**40 x 2**40 shape from costing anything.
    count = 1
    for d in dimensions:
        if d:
            count *= d
            if count > limits.max_elements_per_operand:
                raise exhausted(
                    "max_elements_per_operand",
                    f"{what} has more than {limits.max_elements_per_operand} elements",
                )
    return count
