"""`nnfuzz findings`: list the findings database (signatures, status, first and last seen, how to reproduce)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli.options import Misuse, command, parse

if TYPE_CHECKING:
    from harness.campaign import FindingRecord

EXIT_OK = 0
_CLASSES = ("engine", "translation", "plumbing", "unclassified", "divergence")


def build_parser() -> argparse.ArgumentParser:
    """The options of the findings command."""
    parser = argparse.ArgumentParser(
        prog="nnfuzz findings",
        description="List the findings every campaign recorded: one line per signature with its status (new, "
        "reproducing, fixed), when it was first and last seen and the run that found it. --show prints one "
        "finding in full, with its case and traceback.",
    )
    parser.add_argument(
        "--db", type=Path, metavar="PATH", help="database (default NNFUZZ_FINDINGS_DB or runs/findings.sqlite)"
    )
    parser.add_argument("--status", choices=("new", "reproducing", "fixed"), help="only findings of this status")
    parser.add_argument("--target", help="only findings of this target")
    parser.add_argument(
        "--class",
        dest="cls",
        choices=("engine", "translation", "plumbing", "divergence", "unclassified"),
        help="only findings on an engine of this class",
    )
    parser.add_argument("--show", metavar="SIGNATURE", help="print one finding in full (a unique prefix will do)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--runs", action="store_true", help="list the campaigns instead")
    return parser


@command("findings")
def main_findings(argv: list[str]) -> int:
    """Run the command."""
    from harness.campaign import FindingsDB, FindingsDBError, default_db_path

    args = parse(build_parser(), argv)
    path = args.db or default_db_path()
    if not path.is_file():
        raise Misuse(f"no findings database at {path} (run a campaign first, or pass --db)")
    try:
        db = FindingsDB(path)
    except FindingsDBError as exc:
        raise Misuse(str(exc)) from None
    if args.runs:
        runs = db.runs()
        if args.json:
            print(json.dumps([r.__dict__ for r in runs], indent=1))
        else:
            for r in runs:
                faults = ",".join(r.faults) or "no faults"
                print(f"{r.id}  {r.started}  {r.ended or '(unfinished)':20}  {r.driver} ({faults})  {r.folder}")
        return EXIT_OK
    records = db.records(args.status)
    if args.target:
        records = [r for r in records if r.finding.target == args.target]
    if args.cls:
        records = [r for r in records if r.finding.cls == args.cls]
    if args.show:
        matches = [r for r in records if r.finding.signature.startswith(args.show)]
        if len(matches) != 1:
            raise Misuse(f"{len(matches)} findings match {args.show!r}")
        record = matches[0]
        if args.json:
            print(json.dumps(record.to_json(content=True), indent=1, sort_keys=True))
            return EXIT_OK
        for key, value in record.to_json().items():
            print(f"{key}: {value}")
        finding = record.finding
        if finding.case is not None:
            print("case:\n" + json.dumps(finding.case, indent=1, sort_keys=True))
        if finding.traceback.strip():
            print("traceback:\n" + finding.traceback.rstrip())
        return EXIT_OK
    if args.json:
        print(json.dumps([r.to_json() for r in records], indent=1, sort_keys=True))
        return EXIT_OK
    if not records:
        print("no findings")
        return EXIT_OK
    width = max(len("target"), *(len(r.finding.target) for r in records))
    heading = (
        f"{'signature':16}  {'status':11}  {'target':{width}}  {'outcome':7}  {'first seen':20}  {'last seen':20}  rule"
    )
    # Findings on an engine grouped by class (bugs before divergences), then the driver's own.
    for cls in (*_CLASSES, ""):
        group = [r for r in records if r.finding.cls == cls]
        if not group:
            continue
        print(f"== {cls} ({len(group)})" if cls else f"== the driver's own ({len(group)})")
        print(heading)
        for r in group:
            _print_record(r, width)
    counts = {s: sum(1 for r in records if r.status == s) for s in ("new", "reproducing", "fixed")}
    print(
        f"{len(records)} finding(s): {counts['new']} new, {counts['reproducing']} reproducing, {counts['fixed']} fixed"
    )
    return EXIT_OK


def _print_record(r: FindingRecord, width: int) -> None:
    """One finding's lines: signature, status, target, outcome, dates, rule; its class's evidence; its folder."""
    f = r.finding
    print(
        f"{f.signature:16}  {r.status:11}  {f.target:{width}}  {f.outcome:7}  {r.first_seen:20}  {r.last_seen:20}  "
        f"{f.rule}: {f.title}"
    )
    c = f.classification
    if c:
        shown = c.get("divergence") or ", ".join(c.get("kernel_sets", [])) or "-"
        print(f"{'':18}{c['class']} on {c.get('engine', '')} [{shown}]: {c.get('reason', '')}")
    if f.folder:
        fixed = ", fixed in " + r.fixed_run if r.fixed_run else ""
        print(f"{'':18}{f.folder}  (run {r.first_run}{fixed})")
