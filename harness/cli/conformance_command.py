"""`nnfuzz conformance`: options, a progress line on stderr, the per-operation table, the JSON report."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from harness.case import ConformanceDataMissing
from harness.cli.options import Misuse, add_driver, command, parse
from harness.conformance.driver_backend import load_device
from harness.conformance.report import FAILED, PASSED, SKIPPED, CaseResult
from harness.conformance.runner import load_cases, run_conformance

EXIT_OK, EXIT_FAILURES = 0, 1


def build_parser() -> argparse.ArgumentParser:
    """The options of the conformance command."""
    parser = argparse.ArgumentParser(
        prog="nnfuzz conformance",
        description="Run the public conformance vectors through the reference executor or a driver.",
    )
    add_driver(parser, "driver to test, e.g. driver_under_test:create_device", absent="the reference executor")
    parser.add_argument(
        "--vectors", nargs="+", type=Path, metavar="FILE", help="vector files (default: every public file)"
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the report as JSON to OUT")
    parser.add_argument("--only", metavar="SUBSTRING", help="run only cases whose name contains SUBSTRING")
    parser.add_argument(
        "--timeout", type=float, default=30.0, metavar="SECONDS", help="time allowed per driver call (default 30)"
    )
    parser.add_argument("--failures", type=int, default=50, metavar="N", help="list at most N failures (default 50)")
    return parser


class ProgressLine:
    """A single updating stderr line: count/total and running passed/failed/skipped."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.counts = {PASSED: 0, FAILED: 0, SKIPPED: 0}
        self.interactive = stream.isatty()

    def __call__(self, done: int, total: int, result: CaseResult) -> None:
        """Count one more case and redraw the line (every case on a terminal, every 100 otherwise)."""
        self.counts[result.outcome] += 1
        if not self.interactive and done % 100 and done != total:
            return
        line = (
            f"[{done}/{total}] passed {self.counts[PASSED]} failed {self.counts[FAILED]} "
            f"skipped {self.counts[SKIPPED]}  {result.name}"
        )
        if self.interactive:
            self.stream.write("\r\x1b[K" + line[:160])
            if done == total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


@command("conformance")
def main_conformance(argv: list[str]) -> int:
    """Run the command; 0 when no case failed, 1 when some did, 2 on misuse."""
    args = parse(build_parser(), argv)
    device = None
    if args.driver is not None:
        try:
            device = load_device(args.driver)
        except Exception as exc:  # any failure to import or construct the driver leaves nothing to test
            raise Misuse(f"cannot load driver {args.driver!r}: {exc}") from None
    try:
        cases = load_cases(args.vectors, args.only)
    except (ConformanceDataMissing, FileNotFoundError) as exc:
        raise Misuse(str(exc)) from None
    report = run_conformance(
        driver=args.driver, progress=ProgressLine(sys.stderr), timeout=args.timeout, cases=cases, device=device
    )
    print(report.format_table())
    failures = report.format_failures(args.failures)
    if failures:
        print()
        print(failures)
    print()
    print(report.summary())
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
        print(f"JSON report written to {args.json}")
    return EXIT_FAILURES if report.failed else EXIT_OK
