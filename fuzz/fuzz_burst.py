#!/usr/bin/env python3
"""Fuzzes a driver's bursts: sessions of valid requests and request packets broken as the HAL conformance suite
breaks them (datums removed, inserted or replaced, wrong counts, unknown slots), memories freed and replaced,
result channels too small and releases, over real fast message queues. A finding is a burst result that differs
from executeSynchronously, a malformed packet not refused, a listener that stops serving, non-zero result
padding, a crash or a hang.

Run: fuzz/fuzz_burst.py corpus/burst -max_total_time=60 (driver from NNFUZZ_DRIVER, faults from NNFUZZ_FAULTS),
or `nnfuzz fuzz burst`. Findings replay with `nnfuzz repro FILE --target burst`.
"""

import sys

import _common
import atheris

from harness.targets import burst  # noqa: F401 - registers the target

with atheris.instrument_imports():
    import driver_under_test  # noqa: F401 - the default driver, instrumented for coverage feedback

    DEVICE = _common.device_from_environment()  # a driver named by NNFUZZ_DRIVER is imported (instrumented) here

TARGET = _common.target("burst")


def TestOneInput(data: bytes) -> None:
    """One fuzzer input: decode a case, run it, raise on a broken rule."""
    _common.run_one(TARGET, data, DEVICE)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
