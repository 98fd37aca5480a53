#!/usr/bin/env python3
"""Fuzzes a driver's compilation caching: generated models prepared with cache handles, the saved files corrupted
(bit flips, truncation, extension, swapped byte ranges, files swapped within the cache or with another model's,
wrong handle counts, access modes and offsets, another token, a rewrite while the driver reads) and prepared
again from the cache. A finding is a tampered model cache that prepares, a bad handle accepted, an untouched cache
that does not give back the model, a crash or a hang.

Run: fuzz/fuzz_cache.py corpus/cache -max_total_time=60 (driver from NNFUZZ_DRIVER, faults from NNFUZZ_FAULTS),
or `nnfuzz fuzz cache`. Findings replay with `nnfuzz repro FILE --target cache`.
"""

import sys

import _common
import atheris

from harness.targets import cache  # noqa: F401 - registers the target

with atheris.instrument_imports():
    import driver_under_test  # noqa: F401 - the default driver, instrumented for coverage feedback

    DEVICE = _common.device_from_environment()  # a driver named by NNFUZZ_DRIVER is imported (instrumented) here

TARGET = _common.target("cache")


def TestOneInput(data: bytes) -> None:
    """One fuzzer input: decode a case, run it, raise on a broken rule."""
    _common.run_one(TARGET, data, DEVICE)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
