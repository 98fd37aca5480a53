#!/usr/bin/env python3
"""Fuzzes the engines of a driver against each other: each generated valid model with input values is prepared and
run on every engine the driver runs on (its declared variants: numpy, LiteRT's kernel sets, ONNX Runtime's
optimization levels; NNFUZZ_ENGINES picks some by name), and their statuses and outputs are compared. A finding is a
disagreement between engines (engines.disagree), also on outputs the reference leaves unspecified, an exception
escaping the HAL interface, a hang or a crash.

Run: fuzz/fuzz_differential.py corpus/differential -max_total_time=60 (driver from NNFUZZ_DRIVER, faults from
NNFUZZ_FAULTS), or `nnfuzz fuzz differential`. Findings replay with `nnfuzz repro FILE --target differential`.
"""

import sys

import _common
import atheris

with atheris.instrument_imports():
    import driver_under_test  # noqa: F401 - the default driver, instrumented for coverage feedback

    DEVICE = _common.device_from_environment()  # a driver named by NNFUZZ_DRIVER is imported (instrumented) here

TARGET = _common.target("differential")


def TestOneInput(data: bytes) -> None:
    """One fuzzer input: decode a case, run it on every engine, raise on a disagreement."""
    _common.run_one(TARGET, data, DEVICE)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
