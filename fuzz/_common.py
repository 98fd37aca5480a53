"""Glue the fuzz scripts share: the harness on the path, the device named by the environment, one input run.

Imported before the instrumented block, so the harness itself is not instrumented: coverage feedback comes from
the driver.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# The scripts run from a checkout as well as from an installed package.
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(1, _ROOT)

from harness.drivers import DEFAULT_DRIVER, create_device  # noqa: E402
from harness.hal import Device  # noqa: E402
from harness.targets import TARGETS, run_atheris_one  # noqa: E402
from harness.targets.base import Target  # noqa: E402

DRIVER_ENV, FAULTS_ENV = "NNFUZZ_DRIVER", "NNFUZZ_FAULTS"


def device_from_environment() -> Device:
    """A device from NNFUZZ_DRIVER (module:factory) with the faults NNFUZZ_FAULTS names (comma-separated)."""
    spec = os.environ.get(DRIVER_ENV) or DEFAULT_DRIVER
    faults = [f.strip() for f in os.environ.get(FAULTS_ENV, "").split(",") if f.strip()]
    return create_device(spec, faults=faults)


def target(name: str) -> Target:
    """A registered target."""
    return TARGETS[name]


def run_one(fuzz_target: Target, data: bytes, device: Device) -> None:
    """Decode and run one input; a broken rule escapes as RuleViolation, which libFuzzer records as a crash."""
    run_atheris_one(fuzz_target, data, device)
