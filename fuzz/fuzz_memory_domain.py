#!/usr/bin/env python3
"""Fuzzes a driver's memory domains: allocate with valid and invalid buffer roles (D15), then copyFrom, copyTo and
executions that read or write the driver-managed buffer, legal or not (D16), each judged against a model of the
buffer's state (D17, D18) and, for executions, against the reference executor. A finding is a wrong status, a
buffer that stays initialized after a failure, a copy that skips its checks, wrong values, an exception escaping
the HAL interface, a hang or a crash.

Run: fuzz/fuzz_memory_domain.py corpus/memory_domain -max_total_time=60 (driver from NNFUZZ_DRIVER, faults from
NNFUZZ_FAULTS), or `nnfuzz fuzz memory_domain`. Findings replay with `nnfuzz repro FILE --target memory_domain`.
"""

import sys

import _common
import atheris

from harness.targets import memory_domain  # noqa: F401 - registers the target

with atheris.instrument_imports():
    import driver_under_test  # noqa: F401 - the default driver, instrumented for coverage feedback

    DEVICE = _common.device_from_environment()  # a driver named by NNFUZZ_DRIVER is imported (instrumented) here

TARGET = _common.target("memory_domain")


def TestOneInput(data: bytes) -> None:
    """One fuzzer input: decode a case, run it, raise on a broken rule."""
    _common.run_one(TARGET, data, DEVICE)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
