"""What the nnfuzz commands share: the --driver and --faults options, libFuzzer flags after `--`, and harness misuse
ending a command with a message and exit code 2. Each command declares its other options itself."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Iterable, Sequence

from harness.drivers import DEFAULT_DRIVER, DriverSpecError
from harness.runner.libfuzzer import DRIVER_ENV, FAULTS_ENV

EXIT_MISUSE = 2

Main = Callable[..., int]


class Misuse(ValueError):
    """The command cannot work with what it was given; the message says what to change (exit code 2)."""


class _Parsed(Exception):
    """argparse ended the command: after --help (0) or on a bad option (2, its message printed)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def command(name: str) -> Callable[[Main], Main]:
    """Wrap a command's entry point: argparse's exits become its return code; Misuse and DriverSpecError print
    `nnfuzz NAME: reason` on stderr and return 2."""

    def wrap(main: Main) -> Main:
        @functools.wraps(main)
        def run(argv: list[str], *args: object, **kwargs: object) -> int:
            try:
                return main(argv, *args, **kwargs)
            except _Parsed as parsed:
                return parsed.code
            except (Misuse, DriverSpecError) as exc:
                print(f"nnfuzz {name}: {exc}", file=sys.stderr)
                return EXIT_MISUSE

        return run

    return wrap


def parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """The options in argv (inside a `command`, which returns argparse's exit code when it ends the command)."""
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        raise _Parsed(int(exc.code or 0)) from None


def add_driver(
    parser: argparse.ArgumentParser, purpose: str = "driver to run", *, env: bool = True, absent: str | None = None
) -> None:
    """--driver MODULE:FACTORY, by default NNFUZZ_DRIVER (with env) or harness.drivers.DEFAULT_DRIVER; with
    `absent` (what runs without a driver) there is no default driver."""
    if absent is not None:
        default, said = None, absent
    elif env:
        default, said = os.environ.get(DRIVER_ENV) or DEFAULT_DRIVER, f"{DRIVER_ENV} or {DEFAULT_DRIVER}"
    else:
        default, said = DEFAULT_DRIVER, DEFAULT_DRIVER
    parser.add_argument("--driver", default=default, metavar="MODULE:FACTORY", help=f"{purpose} (default: {said})")


def add_faults(parser: argparse.ArgumentParser) -> None:
    """--faults a,b: the faults to start the driver with, by default NNFUZZ_FAULTS (read with `names`)."""
    parser.add_argument(
        "--faults", default=os.environ.get(FAULTS_ENV, ""), help=f"faults to start it with, a,b (default: {FAULTS_ENV})"
    )


def fuzz_targets(requested: list[str], command: str) -> list[str]:
    """The targets named, checked to have a fuzz script and a registered target (Misuse otherwise); none named:
    every target with a script, a script whose target is not registered (yet) left out with a word."""
    from harness.campaign import available_targets
    from harness.runner import UnknownTarget, resolve_target

    known = available_targets()
    targets = list(requested)
    if not targets:
        for name in known:
            try:
                resolve_target(name)
                targets.append(name)
            except UnknownTarget:
                print(f"nnfuzz {command}: fuzz/fuzz_{name}.py has no registered target; left out", file=sys.stderr)
    unknown = [n for n in targets if n not in known]
    if unknown:
        raise Misuse(f"no fuzz script for target(s) {', '.join(unknown)}; known: {', '.join(known)}")
    for name in targets:
        try:
            resolve_target(name)
        except UnknownTarget as exc:
            raise Misuse(str(exc)) from None
    if not targets:
        raise Misuse("no target")
    return targets


def names(values: str | Iterable[str] | None) -> list[str]:
    """Names given comma-separated, in one option value or several, in order and without blanks."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def libfuzzer_flags(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """A command's own arguments, and the libFuzzer flags that follow `--`."""
    if "--" not in argv:
        return list(argv), []
    cut = list(argv).index("--")
    return list(argv[:cut]), list(argv[cut + 1 :])
