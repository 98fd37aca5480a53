"""Glue the fuzz scripts share: the harness on the path, the device named by the options or the environment, one
input run.

Imported before the instrumented block, so the harness itself is not instrumented: coverage feedback comes from
the driver.

The driver is `--driver MODULE:FACTORY` (or `--driver=...`) on the command line, else NNFUZZ_DRIVER, else the
bundled driver; `--faults a,b` or NNFUZZ_FAULTS plant faults. Both options are taken out of sys.argv before
libFuzzer sees it and put in the environment, so the processes libFuzzer starts itself (-fork, -merge,
-minimize_crash) get the same driver. Packaged by PyInstaller (as OSS-Fuzz's compile_python_fuzzer does), a script
only finds the modules bundled with it: a driver that was not bundled is imported from the folders of
NNFUZZ_DRIVER_PATH and PYTHONPATH and from the working directory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# The scripts run from a checkout as well as from an installed package.
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(1, _ROOT)

from harness.drivers import DEFAULT_DRIVER, DriverSpecError, create_device  # noqa: E402
from harness.hal import Device  # noqa: E402
from harness.targets import TARGETS, run_atheris_one  # noqa: E402
from harness.targets.base import Target  # noqa: E402

DRIVER_ENV, FAULTS_ENV, DRIVER_PATH_ENV = "NNFUZZ_DRIVER", "NNFUZZ_FAULTS", "NNFUZZ_DRIVER_PATH"
_OPTIONS = {"--driver": DRIVER_ENV, "--faults": FAULTS_ENV}
_EXAMPLES = {"--driver": DEFAULT_DRIVER, "--faults": "a,b"}


def take_options(argv: list[str], environ: dict | os._Environ = os.environ) -> list[str]:
    """Move --driver and --faults (`--x VALUE` or `--x=VALUE`) from argv into the environment; argv is changed in
    place and returned. Everything else is libFuzzer's."""
    kept, i = [], 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if i > 0 and name in _OPTIONS:
            if not eq:
                if i + 1 >= len(argv):
                    _misuse(f"{name} needs a value (e.g. {name}={_EXAMPLES[name]})")
                value = argv[i + 1]
                i += 1
            environ[_OPTIONS[name]] = value
        else:
            kept.append(arg)
        i += 1
    argv[:] = kept
    return argv


def _misuse(message: str) -> None:
    """Stop with a clear message and exit code 2 (harness misuse), before libFuzzer starts."""
    print(f"{Path(sys.argv[0]).name}: {message}", file=sys.stderr)
    raise SystemExit(2)


def _driver_search_path() -> None:
    """In a packaged (frozen) script, let a driver that was not bundled be imported from disk."""
    if not getattr(sys, "frozen", False):
        return
    extra = [os.environ.get(DRIVER_PATH_ENV, ""), os.environ.get("PYTHONPATH", "")]
    for folder in [p for value in extra for p in value.split(os.pathsep) if p] + [os.getcwd()]:
        if folder not in sys.path:
            sys.path.append(folder)


def device_from_environment() -> Device:
    """A device from --driver or NNFUZZ_DRIVER (module:factory) with the faults --faults or NNFUZZ_FAULTS names
    (comma-separated)."""
    take_options(sys.argv)
    _driver_search_path()
    spec = os.environ.get(DRIVER_ENV) or DEFAULT_DRIVER
    faults = [f.strip() for f in os.environ.get(FAULTS_ENV, "").split(",") if f.strip()]
    try:
        return create_device(spec, faults=faults)
    except (DriverSpecError, ValueError) as exc:  # an unloadable driver or an unknown fault
        _misuse(str(exc))
        raise


def target(name: str) -> Target:
    """A registered target."""
    return TARGETS[name]


def run_one(fuzz_target: Target, data: bytes, device: Device) -> None:
    """Decode and run one input; a broken rule escapes as RuleViolation, which libFuzzer records as a crash."""
    run_atheris_one(fuzz_target, data, device)
