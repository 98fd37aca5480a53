#!/usr/bin/env python3
"""Fuzzes a driver's burst listener with raw bytes: the fuzzer's bytes (as they come, or spliced into a valid
request packet) are written into a configured burst's request channel as datums, then a valid request follows.
A finding is a result that is not well formed, a malformed packet not refused, a listener that hangs, dies or
stops serving the valid request as executeSynchronously does, or a crash.

Run: fuzz/fuzz_burst_packets.py corpus/burst_packets -max_total_time=60 (driver from NNFUZZ_DRIVER, faults from
NNFUZZ_FAULTS), or `nnfuzz fuzz burst_packets`. Findings replay with `nnfuzz repro FILE --target burst_packets`.
"""

import sys

import _common
import atheris

from harness.targets import burst_packets  # noqa: F401 - registers the target

with atheris.instrument_imports():
    import driver_under_test  # noqa: F401 - the default driver, instrumented for coverage feedback

    DEVICE = _common.device_from_environment()  # a driver named by NNFUZZ_DRIVER is imported (instrumented) here

TARGET = _common.target("burst_packets")


def TestOneInput(data: bytes) -> None:
    """One fuzzer input: decode a case, run it, raise on a broken rule."""
    _common.run_one(TARGET, data, DEVICE)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
