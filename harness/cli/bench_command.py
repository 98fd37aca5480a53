"""`nnfuzz bench`: executions per second of each target on the fault-free driver, and the harness's overhead."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import nullcontext
from pathlib import Path

from harness.cli.options import Misuse, add_driver, command, names, parse

EXIT_OK = 0


def build_parser() -> argparse.ArgumentParser:
    """The options of the bench command."""
    parser = argparse.ArgumentParser(
        prog="nnfuzz bench",
        description="Measure executions per second of each target, in-process on one core, on the fault-free "
        "driver; for validation and execution also the bare driver calls on the same cases, and the ratio.",
    )
    parser.add_argument("--seconds", type=float, default=10.0, metavar="N", help="time per target (default 10)")
    parser.add_argument(
        "--targets", nargs="+", metavar="T", help="targets, space or comma separated (default: every registered target)"
    )
    parser.add_argument(
        "--cpu", type=int, metavar="N", help="the CPU to run on (default: the first this process may use)"
    )
    parser.add_argument("--no-pin", action="store_true", help="do not restrict the run to one CPU")
    add_driver(parser, "driver", env=False)
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the figures as JSON to OUT")
    return parser


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


@command("bench")
def main_bench(argv: list[str]) -> int:
    """Run the command."""
    from harness.bench import TargetDone, TargetStarted, one_cpu, report_json, run_bench, usable_cpus
    from harness.runner import UnknownTarget, registered_targets, resolve_target

    args = parse(build_parser(), argv)
    targets = names(args.targets) or sorted(registered_targets())
    try:
        for t in targets:
            resolve_target(t)
    except UnknownTarget as exc:
        raise Misuse(str(exc)) from None

    if args.cpu is not None and args.cpu not in usable_cpus():
        usable = ", ".join(map(str, sorted(usable_cpus()))) or "none: no CPU affinity here"
        raise Misuse(f"CPU {args.cpu} is not one this process may use ({usable})")

    def progress(event: TargetStarted | TargetDone) -> None:
        if isinstance(event, TargetStarted):
            print(f"measuring {event.name} for {event.seconds:g} s...", file=sys.stderr, flush=True)

    # A driver spec that loads no driver (DriverSpecError) ends the command as misuse, through `command`.
    with nullcontext(None) if args.no_pin else one_cpu(args.cpu) as cpu:
        where = "any CPU" if cpu is None else f"CPU {cpu}"
        print(f"running on {where}", file=sys.stderr, flush=True)
        results = run_bench(targets, args.seconds, args.driver, progress)
    print(
        f"{'target':16} {'exec/s':>10} {'cpu us/case':>12} {'cases':>8} {'failed':>7} {'bare calls/s':>13} "
        f"{'overhead':>9}"
    )
    for r in results:
        ratio = r.overhead_ratio
        print(
            f"{r.name:16} {r.execs_per_second:10.1f} {r.cpu_us_per_case:12.0f} {r.executions:8} {r.failures:7} "
            f"{_fmt(r.bare_per_second, '13.1f'):>13} {_fmt(ratio, '8.1f') + ('x' if ratio else ''):>9}"
        )
    print("overhead: bare driver calls per second / whole cases per second (decode, drive, judge)")
    print("cpu us/case: processor time of the whole process per case, which other work on the machine disturbs less")
    if any(r.failures for r in results):
        print("note: some cases failed on the fault-free driver; run `nnfuzz evaluate` or fuzz to see them")
    if args.json:
        args.json.write_text(json.dumps(report_json(results, cpu), indent=1) + "\n")
    return EXIT_OK
