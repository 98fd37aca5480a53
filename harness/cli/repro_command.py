"""`nnfuzz repro FILE`: replay a saved input isolated, print the case, the verdict and the traceback."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.cli.options import Misuse, add_driver, add_faults, command, names, parse

EXIT_OK, EXIT_FAILURE = 0, 1


def build_parser() -> argparse.ArgumentParser:
    """The options of the repro command."""
    parser = argparse.ArgumentParser(
        prog="nnfuzz repro",
        description="Replay a saved input (raw fuzzer bytes or a case JSON) in an isolated worker: print the "
        "decoded case, the verdict, the rule and the traceback. Exit 0 on SUCCESS, 1 otherwise.",
    )
    parser.add_argument("file", type=Path, metavar="FILE", help="a crash file, a corpus entry or a case JSON")
    parser.add_argument("--target", help="the target of raw bytes (default: from the case or the file's folder)")
    add_driver(parser, "driver to run")
    add_faults(parser)
    parser.add_argument("--timeout", type=float, default=30.0, metavar="S", help="time limit of the case (default 30)")
    parser.add_argument("--emit-pytest", type=Path, metavar="PATH", help="write a pytest regression test to PATH")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the case and verdict as JSON to OUT")
    parser.add_argument("--quiet", action="store_true", help="do not print the case")
    return parser


@command("repro")
def main_repro(argv: list[str]) -> int:
    """Run the command."""
    from harness.runner import UnknownTarget, WorkerStartError, run_isolated
    from harness.runner.replay import InputError, load_input, pytest_source

    args = parse(build_parser(), argv)
    faults = names(args.faults)
    try:
        saved = load_input(args.file, args.target)
        if saved.case is None:
            print(f"{args.file}: the input decodes to no case (the generator rejects it); nothing to replay")
            return EXIT_OK
        if not args.quiet:
            print(f"case ({saved.target}{', from raw fuzzer bytes' if saved.data is not None else ''}):")
            print(saved.case.dumps())
        result = run_isolated(saved.target, saved.payload, args.driver, faults, args.timeout)
    except (InputError, UnknownTarget, WorkerStartError, ValueError) as exc:
        raise Misuse(str(exc)) from None
    verdict = result.verdict
    print(
        f"\nverdict: {verdict.outcome.value}  ({result.elapsed:.3f} s, driver {args.driver}, faults {faults or 'none'})"
    )
    if not verdict.ok:
        print(f"rule: {verdict.rule}\ntitle: {verdict.title}\nsignature: {verdict.signature}")
        if verdict.details:
            print(f"details: {verdict.details}")
        if verdict.frames:
            print("frames: " + " <- ".join(verdict.frames))
    if result.traceback_text.strip():
        print("traceback:\n" + result.traceback_text.rstrip())
    if args.json:
        report = {
            "file": str(args.file),
            "target": saved.target,
            "driver": args.driver,
            "faults": faults,
            "case": result.case or saved.case.to_json(),
            "verdict": verdict.to_json(),
            "traceback": result.traceback_text,
            "elapsed": result.elapsed,
        }
        args.json.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    if args.emit_pytest:
        if saved.data is not None and not verdict.ok:
            # The test embeds the decoded case JSON: make sure that form fails the same way as the bytes did.
            again = run_isolated(saved.target, saved.case, args.driver, faults, args.timeout).verdict
            if again.signature != verdict.signature:
                print(
                    f"warning: the case JSON ends {again.outcome.value} [{again.rule}], not like the raw bytes; "
                    "the regression test may not reproduce the finding",
                    file=sys.stderr,
                )
        source = pytest_source(saved.target, saved.case, result, args.driver, faults, args.timeout)
        args.emit_pytest.parent.mkdir(parents=True, exist_ok=True)
        args.emit_pytest.write_text(source)
        print(f"regression test written to {args.emit_pytest}")
    return EXIT_OK if verdict.ok else EXIT_FAILURE
