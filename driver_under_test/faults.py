"""The catalogue of injectable faults: named, documented bugs a device can be started with.

A fault lets the harness prove that it finds what it claims to find. Enable faults with
`create_device(faults=[...])` or the NNFUZZ_FAULTS environment variable (comma-separated names).
Each fault is registered once with the area it lives in and a description of the bug it plants; the code
that plants it asks `faults.active(name)` at the place the bug would be.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

ENV_VAR = "NNFUZZ_FAULTS"


@dataclass(frozen=True)
class Fault:
    """One catalogued fault."""

    name: str
    area: str  # validation | execution | robustness | memory_domain | burst | cache
    description: str


CATALOGUE: dict[str, Fault] = {}


def define(name: str, area: str, description: str) -> Fault:
    """Add a fault to the catalogue; a duplicate name is an error at import time."""
    if name in CATALOGUE:
        raise RuntimeError(f"fault {name!r} defined twice")
    CATALOGUE[name] = Fault(name, area, description)
    return CATALOGUE[name]


class FaultSet:
    """The faults one device instance was started with."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        names = [n.strip() for n in names if n and n.strip()]
        unknown = sorted(set(names) - set(CATALOGUE))
        if unknown:
            raise ValueError(f"unknown fault(s) {', '.join(unknown)}; known: {', '.join(sorted(CATALOGUE)) or 'none'}")
        self.names = frozenset(names)

    def active(self, name: str) -> bool:
        """True if the device runs with this fault."""
        return name in self.names

    def __repr__(self) -> str:
        return f"FaultSet({sorted(self.names)})"


def resolve(faults: Iterable[str] | None) -> FaultSet:
    """The fault set from an explicit list (even empty), or from NNFUZZ_FAULTS when none is given."""
    if faults is None:
        faults = os.environ.get(ENV_VAR, "").split(",")
    elif isinstance(faults, str):
        faults = faults.split(",")
    return FaultSet(faults)


# --- Faults declared here rather than beside the code that consults them ------------------------------------------

HARDWARE_BUFFER_HEADER_UNCHECKED = define(
    "hardware_buffer_header_unchecked",
    "robustness",
    "Maps an execution's hardware-buffer pools without checking their descriptor's magic and version, so a "
    "malformed descriptor is used as if it were valid (D25).",
).name
FILL_SIZE_UNCHECKED = define(
    "fill_size_unchecked",
    "robustness",
    "FILL allocates and writes an output of whatever run-time shape it is given instead of refusing one above the "
    "element limit with RESOURCE_EXHAUSTED_PERSISTENT, so a huge shape exhausts memory (D26).",
).name
