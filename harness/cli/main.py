"""`nnfuzz`: a thin front end. Each subcommand parses its options and hands them to the engine that does the work.

Exit codes: 0 success, 1 the run found failures, 2 misuse (bad arguments, unloadable driver).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

from harness.cli.options import EXIT_MISUSE


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, one-line help and the function taking its raw arguments."""

    name: str
    help: str
    run: Callable[[list[str]], int]


def _conformance(argv: list[str]) -> int:
    from harness.cli.conformance_command import main_conformance

    return main_conformance(argv)


def _ops(argv: list[str]) -> int:
    from harness.cli.ops_command import main_ops

    return main_ops(argv)


def _fuzz(argv: list[str]) -> int:
    from harness.cli.fuzz_command import main_fuzz

    return main_fuzz(argv)


def _repro(argv: list[str]) -> int:
    from harness.cli.repro_command import main_repro

    return main_repro(argv)


def _evaluate(argv: list[str]) -> int:
    from harness.cli.evaluate_command import main_evaluate

    return main_evaluate(argv)


def _bench(argv: list[str]) -> int:
    from harness.cli.bench_command import main_bench

    return main_bench(argv)


def _campaign(argv: list[str]) -> int:
    from harness.cli.campaign_command import main_campaign

    return main_campaign(argv)


def _corpus(argv: list[str]) -> int:
    from harness.cli.corpus_command import main_corpus

    return main_corpus(argv)


def _findings(argv: list[str]) -> int:
    from harness.cli.findings_command import main_findings

    return main_findings(argv)


def _export(argv: list[str]) -> int:
    from harness.cli.export_command import main_export

    return main_export(argv)


COMMANDS = {
    c.name: c
    for c in (
        Command("conformance", "run the public conformance vectors through the reference or a driver", _conformance),
        Command("ops", "list the operation catalogue: signatures, shape rules and reference kernels", _ops),
        Command("fuzz", "fuzz one target with its Atheris script for a time budget and list the findings", _fuzz),
        Command("repro", "replay a saved input isolated: the decoded case, the verdict and the traceback", _repro),
        Command("evaluate", "measure whether and how fast the targets find each catalogued driver fault", _evaluate),
        Command(
            "bench", "executions per second of each target, and the harness's overhead over bare driver calls", _bench
        ),
        Command("campaign", "fuzz all targets for a time budget; triage, record and report the findings", _campaign),
        Command("findings", "list the findings database: signatures, status, first and last seen", _findings),
        Command("export", "write a finding on an engine as a standalone reproducer for the engine's owner", _export),
        Command(
            "corpus", "seeds and working corpora: sizes and coverage per target; minimize, promote into seeds", _corpus
        ),
    )
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser (subcommands parse their own options)."""
    parser = argparse.ArgumentParser(
        prog="nnfuzz",
        description="Fuzzing and property-based validation harness for NN HAL 1.3-style drivers.",
        epilog="Run 'nnfuzz COMMAND --help' for a command's options.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS.values():
        sub.add_parser(command.name, help=command.help, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `nnfuzz` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv or argv[0] not in COMMANDS:
        if argv and not argv[0].startswith("-"):
            parser.print_usage(sys.stderr)
            print(f"nnfuzz: unknown command {argv[0]!r}; choose from {', '.join(COMMANDS)}", file=sys.stderr)
            return EXIT_MISUSE
        parser.parse_args(argv)  # handles --help
        parser.print_help()
        return EXIT_MISUSE if argv else 0
    return COMMANDS[argv[0]].run(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
