#!/usr/bin/env python3
"""Fuzzes a driver's request validation: valid requests of generated models broken by one V30-V37 mutation
(argument counts, ranks and dimensions, pool bounds, overlapping outputs, values for omitted arguments, ...) and
run on every execution path, which must reject them with INVALID_ARGUMENT, no output shapes and no timing; a
mutation invalid only for the fenced path must still execute correctly on the others. A finding is an invalid
request accepted, a valid one mishandled, an exception escaping the HAL interface, a hang or a crash.

Run: fuzz/fuzz_request.py corpus/request -max_total_time=60 (driver from NNFUZZ_DRIVER, faults from
NNFUZZ_FAULTS), or `nnfuzz fuzz request`. Findings replay with `nnfuzz repro FILE --target request`.
"""

import sys

import _common
import atheris

with atheris.instrument_imports():
    import driver_under_test  # noqa: F401 - the default driver, instrumented for coverage feedback

    DEVICE = _common.device_from_environment()  # a driver named by NNFUZZ_DRIVER is imported (instrumented) here

TARGET = _common.target("request")


def TestOneInput(data: bytes) -> None:
    """One fuzzer input: decode a case, run it, raise on a broken rule."""
    _common.run_one(TARGET, data, DEVICE)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
