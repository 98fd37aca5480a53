"""`nnfuzz evaluate`: start the driver with each catalogued fault; measure whether and how fast the targets find it."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TextIO

from harness.cli import mutants_command
from harness.cli.options import Misuse, add_driver, command, names, parse

EXIT_OK, EXIT_MISSED = 0, 1


def build_parser() -> argparse.ArgumentParser:
    """The options of the evaluate command."""
    parser = argparse.ArgumentParser(
        prog="nnfuzz evaluate",
        description="For each fault of the driver's catalogue, run seeded random cases of the targets on the driver "
        "started with that fault until one fails or the budget is spent; then run the fault-free driver for the same "
        "budget and report anything found there as a false alarm. Exit 1 if a fault was missed or there was a false "
        "alarm. With --mutants N, evaluate against N semantic mutants of the driver's source instead; with "
        "--mutants-from FILE, against the mutants an earlier run recorded (see below).",
    )
    parser.add_argument(
        "--budget-seconds",
        type=float,
        default=60.0,
        metavar="N",
        help="time per fault and for the fault-free run (default 60)",
    )
    parser.add_argument("--faults", help="only these faults, a,b (default: the whole catalogue)")
    parser.add_argument(
        "--targets",
        nargs="+",
        metavar="T",
        help="targets to run (default: every registered target but differential, which judges the driver's engines "
        "against each other)",
    )
    parser.add_argument("--list", action="store_true", help="list the fault catalogue and exit")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the report as JSON to OUT")
    add_driver(parser, "driver", env=False)
    parser.add_argument(
        "--catalogue", metavar="MODULE", help="module with the fault CATALOGUE (default: the driver's faults)"
    )
    parser.add_argument("--timeout", type=float, default=None, metavar="S", help="time limit of one case (default 20)")
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help="where failing cases are saved (default runs/evaluate-TIME/)"
    )
    mutants_command.add_options(parser)
    return parser


class Printer:
    """Prints the evaluation's events: a live line per run on a terminal, a line per run otherwise."""

    def __init__(self, stream: TextIO, every_s: float = 10.0) -> None:
        self.stream = stream
        self.interactive = stream.isatty()
        self.every_s = every_s  # between progress lines when not on a terminal
        self._next = every_s

    def __call__(self, event) -> None:
        """Print one event."""
        from harness import evaluate as ev

        w = self.stream.write
        if isinstance(event, ev.RunStarted):
            w(
                f"{event.fault or '(fault-free)'}: running for up to {event.budget_s:g} s\n"
                if not self.interactive
                else ""
            )
        elif isinstance(event, ev.Progress) and self.interactive:
            name = event.fault or "(fault-free)"
            w(f"\r\x1b[K{name}: {event.seconds:5.1f} s, {event.cases} cases ({event.rejected} rejected)")
        elif isinstance(event, ev.FaultDone):
            r = event.result
            found = f"FOUND in {r.seconds:.2f} s by {r.target} [{r.rule}]" if r.found else "not found"
            w(f"{self._clear()}{r.name} ({r.area}): {found} after {event.cases} cases\n")
        elif isinstance(event, ev.FalseAlarmSeen):
            a = event.alarm
            w(f"{self._clear()}  false alarm in {a.fault or 'the fault-free run'}: {a.target} [{a.rule}] {a.title}\n")
            if a.repro:
                w(f"    {a.repro}\n")
        elif isinstance(event, ev.CleanRunDone):
            w(
                f"{self._clear()}(fault-free): {event.cases} cases, {event.failing} failed "
                f"({event.new_alarms} new false alarm signature(s))\n"
            )
        self.stream.flush()

    def _clear(self) -> str:
        return "\r\x1b[K" if self.interactive else ""


def _print_catalogue(catalogue) -> None:
    width = max((len(f.name) for f in catalogue), default=4)
    for f in catalogue:
        print(f"{f.name:{width}}  {f.area:13}  {f.description}")
    print(f"{len(catalogue)} faults")


def _print_table(report) -> None:
    rows = [f.to_json() for f in report.faults]
    width = max((len(r["name"]) for r in rows), default=4)
    print(f"\n{'fault':{width}}  {'area':13} {'found':5} {'seconds':>8}  target / rule")
    for r in rows:
        seconds = f"{r['seconds']:8.2f}" if r["seconds"] is not None else f"{'-':>8}"
        where = f"{r['target']} [{r['rule']}]" if r["found"] else "-"
        print(f"{r['name']:{width}}  {r['area']:13} {'yes' if r['found'] else 'NO':5} {seconds}  {where}")
    found = sum(r["found"] for r in rows)
    print(f"{found} of {len(rows)} faults found; {len(report.false_alarms)} false alarm(s)")


def _targets(args: argparse.Namespace) -> list[str]:
    """The targets asked for (default: every registered target but those an evaluation leaves out), each known."""
    from harness.evaluate import default_targets
    from harness.runner import UnknownTarget, registered_targets, resolve_target

    targets = args.targets or default_targets(registered_targets())
    try:
        for t in targets:
            resolve_target(t)
    except UnknownTarget as exc:
        raise Misuse(str(exc)) from None
    if not targets:
        raise Misuse("no targets")
    return targets


@command("evaluate")
def main_evaluate(argv: list[str]) -> int:
    """Run the command."""
    from harness import evaluate as ev
    from harness.runner import WorkerStartError

    args = parse(build_parser(), argv)
    if args.mutants is not None or args.mutants_from is not None:
        given = (("--faults", args.faults), ("--list", args.list), ("--catalogue", args.catalogue))
        conflicting = [option for option, value in given if value]
        if conflicting:
            mode = "--mutants" if args.mutants is not None else "--mutants-from"
            raise Misuse(f"{mode} does not go with {', '.join(conflicting)}")
        return mutants_command.run(args, _targets(args))
    try:
        catalogue = ev.load_catalogue(args.catalogue or ev.catalogue_module_for(args.driver))
    except (ImportError, AttributeError) as exc:
        raise Misuse(f"cannot read the fault catalogue: {exc}") from None
    if args.list:
        _print_catalogue(catalogue)
        if args.json:
            rows = [{"name": f.name, "area": f.area, "description": f.description} for f in catalogue]
            args.json.write_text(json.dumps({"catalogue": rows}, indent=1) + "\n")
        return EXIT_OK
    if args.faults is not None:
        wanted = names(args.faults)
        by_name = {f.name: f for f in catalogue}
        unknown = [n for n in wanted if n not in by_name]
        if unknown:
            raise Misuse(f"unknown fault(s) {', '.join(unknown)}; see --list")
        catalogue = [by_name[n] for n in wanted]
    targets = _targets(args)
    out = args.out or Path("runs") / f"evaluate-{time.strftime('%Y%m%d-%H%M%S')}"
    timeout = args.timeout if args.timeout is not None else ev.DEFAULT_TIMEOUT_S
    config = ev.Config(catalogue, targets, args.driver, args.budget_seconds, timeout, out)
    print(
        f"evaluating {len(catalogue)} fault(s) with targets {', '.join(targets)}: "
        f"{args.budget_seconds:g} s each, plus the fault-free driver"
    )
    try:
        report = ev.evaluate(config, Printer(sys.stdout))
    except WorkerStartError as exc:
        raise Misuse(str(exc)) from None
    _print_table(report)
    if args.json:
        args.json.write_text(json.dumps(report.to_json(), indent=1) + "\n")
    return EXIT_OK if report.ok else EXIT_MISSED
