#!/usr/bin/env python3
"""Fuzzes a driver's model validation: getSupportedOperations and prepareModel on generated models, left valid,
mutated into the invalid models of the V catalogue, or prepared with invalid arguments. A finding is an invalid
model accepted, a valid one refused, an exception escaping the HAL interface, a hang or a crash.

Run: fuzz/fuzz_validation.py corpus/validation -max_total_time=60 (driver from NNFUZZ_DRIVER, faults from
NNFUZZ_FAULTS), or `nnfuzz fuzz validation`. Findings replay with `nnfuzz repro FILE --target validation`.
"""

import sys

import _common
import atheris

with atheris.instrument_imports():
    import driver_under_test  # noqa: F401 - the default driver, instrumented for coverage feedback

    DEVICE = _common.device_from_environment()  # a driver named by NNFUZZ_DRIVER is imported (instrumented) here

TARGET = _common.target("validation")


def TestOneInput(data: bytes) -> None:
    """One fuzzer input: decode a case, run it, raise on a broken rule."""
    _common.run_one(TARGET, data, DEVICE)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
