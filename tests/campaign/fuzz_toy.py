#!/usr/bin/env python3
"""Fuzzes the toy driver's toy_sum: the campaign tests' fuzz script (driver from NNFUZZ_DRIVER, faults from
NNFUZZ_FAULTS, default the toy driver)."""

import os
import sys
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parents[2]))

import atheris  # noqa: E402

from harness.drivers import create_device  # noqa: E402
from harness.targets import run_atheris_one  # noqa: E402

with atheris.instrument_imports():
    from tests.campaign import toy

FAULTS = [f for f in os.environ.get("NNFUZZ_FAULTS", "").split(",") if f]
DEVICE = create_device(os.environ.get("NNFUZZ_DRIVER") or toy.SPEC, faults=FAULTS)


def TestOneInput(data: bytes) -> None:
    """One fuzzer input: decode, run, raise on a broken rule."""
    run_atheris_one(toy.TARGET, data, DEVICE)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
