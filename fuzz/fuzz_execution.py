#!/usr/bin/env python3
"""Fuzzes a driver's execution: generated valid models with input values, prepared and run on the execution
paths (synchronous, asynchronous, fenced), outputs compared with the reference executor. A finding is a wrong
value, shape, status or timing convention, an exception escaping the HAL interface, a hang or a crash.

Run: fuzz/fuzz_execution.py corpus/execution -max_total_time=60 (driver from NNFUZZ_DRIVER, faults from
NNFUZZ_FAULTS), or `nnfuzz fuzz execution`. Findings replay with `nnfuzz repro FILE --target execution`.
"""

import sys

import _common
import atheris

with atheris.instrument_imports():
    import driver_under_test  # noqa: F401 - the default driver, instrumented for coverage feedback

    DEVICE = _common.device_from_environment()  # a driver named by NNFUZZ_DRIVER is imported (instrumented) here

TARGET = _common.target("execution")


def TestOneInput(data: bytes) -> None:
    """One fuzzer input: decode a case, run it, raise on a broken rule."""
    _common.run_one(TARGET, data, DEVICE)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
