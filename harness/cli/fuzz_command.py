"""`nnfuzz fuzz TARGET`: run one Atheris fuzz script for a time budget, with a live status line; list the findings.

What the fuzzer wrote is triaged as a campaign does (harness.campaign.triage): each file replayed alone, named by
its verdict's signature, each signature minimized and stored as a finding folder under OUT/findings/, next to
libFuzzer's files. The run keeps its own findings database (OUT/findings.sqlite, for `nnfuzz findings --db`), not
the campaigns' one: a one-off run, often on planted faults, must not make a campaign's new finding a known one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.cli.options import Misuse, add_driver, add_faults, command, libfuzzer_flags, names, parse

if TYPE_CHECKING:
    from harness.campaign import Finding
    from harness.campaign.triage import Triaged

EXIT_OK, EXIT_FINDINGS = 0, 1
DEFAULT_TRIAGE = 20
DEFAULT_MINIMIZE_S = 30.0
FINDINGS_DB = "findings.sqlite"


def build_parser() -> argparse.ArgumentParser:
    """The options of the fuzz command."""
    parser = argparse.ArgumentParser(
        prog="nnfuzz fuzz",
        description="Fuzz one target with its Atheris script (fuzz/fuzz_TARGET.py). libFuzzer flags may follow "
        "'--', e.g. nnfuzz fuzz validation -- -max_len=2048.",
    )
    parser.add_argument("target", help="validation, execution, request, ...")
    parser.add_argument("--budget-seconds", type=int, default=60, metavar="N", help="fuzzing time (default 60)")
    parser.add_argument(
        "--corpus",
        type=Path,
        metavar="DIR",
        help="seed corpus, read only (default corpus/TARGET); new inputs go to OUT/corpus",
    )
    parser.add_argument("--out", type=Path, metavar="DIR", help="run folder (default runs/fuzz-TARGET-TIMESTAMP/)")
    add_driver(parser, "driver to fuzz")
    add_faults(parser)
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="fuzzing processes (libFuzzer -fork=N)")
    parser.add_argument("--keep-going", action="store_true", help="go on after a finding (always so with --jobs > 1)")
    parser.add_argument("--timeout", type=int, default=10, metavar="S", help="time limit of one input (default 10)")
    parser.add_argument(
        "--triage",
        type=int,
        default=DEFAULT_TRIAGE,
        metavar="N",
        help=f"triage up to N finding files as a campaign does: replayed isolated, named, deduplicated, minimized and "
        f"stored in OUT/findings/SIGNATURE/ (default {DEFAULT_TRIAGE}; 0: none)",
    )
    parser.add_argument(
        "--minimize-seconds",
        type=float,
        default=DEFAULT_MINIMIZE_S,
        metavar="S",
        help=f"minimization time per distinct finding (default {DEFAULT_MINIMIZE_S:g}; 0: none)",
    )
    return parser


class StatusLine:
    """A live status line on a terminal; a line every few seconds otherwise."""

    def __init__(self, target: str, budget_s: int, stream: TextIO, every_s: float = 5.0) -> None:
        self.target, self.budget_s, self.stream = target, budget_s, stream
        self.interactive = stream.isatty()
        self.every_s = every_s
        self._last = -every_s

    def __call__(self, stats) -> None:
        """Redraw the line from a FuzzStats."""
        line = (
            f"[{self.target}] {stats.elapsed:5.0f}/{self.budget_s}s  execs {stats.execs}  exec/s "
            f"{stats.execs_per_second}  cov {stats.coverage if stats.coverage is not None else '-'}  corpus "
            f"{stats.corpus if stats.corpus is not None else '-'}  findings {stats.findings}"
        )
        if self.interactive:
            self.stream.write("\r\x1b[K" + line)
        elif stats.elapsed - self._last >= self.every_s:
            self._last = stats.elapsed
            self.stream.write(line + "\n")
        self.stream.flush()

    def end(self) -> None:
        """Leave the line."""
        if self.interactive:
            self.stream.write("\n")


def triage(args: argparse.Namespace, out: Path, faults: Sequence[str], files: list[Path]) -> Triaged:
    """Triage up to --triage of the files as a campaign does, into the run folder and its own database."""
    from harness.campaign import CampaignConfig, TargetSpec
    from harness.campaign.triage import Triaged, TriageError, triage_artifacts

    files = files[: max(args.triage, 0)]
    if not files:
        return Triaged({}, {})
    spec = TargetSpec.named(args.target)
    config = CampaignConfig(
        targets=[spec],
        out_dir=out,
        driver=args.driver,
        faults=faults,
        db_path=out / FINDINGS_DB,
        timeout_s=args.timeout,
        minimize_s=args.minimize_seconds,
    )
    try:
        return triage_artifacts(config, spec, files)
    except TriageError as exc:
        print(f"nnfuzz fuzz: cannot replay the findings: {exc}", file=sys.stderr)
        return Triaged({}, {})


def _print_findings(files: list[dict], findings: dict[str, Finding]) -> None:
    """One entry per distinct finding (replayed files), then the files not replayed, each with a repro command."""
    groups: dict[str, list[dict]] = {}
    for entry in files:
        verdict = entry.get("verdict")
        key = verdict["signature"] if verdict else f"unreplayed-{entry['kind']}"
        groups.setdefault(key, []).append(entry)
    for key, entries in groups.items():
        verdict = entries[0].get("verdict")
        if verdict is None:
            what = f"{entries[0]['kind']} (not replayed)"
        elif verdict["outcome"] == "SUCCESS":
            what = "does not reproduce in isolation (passes when replayed alone)"
        else:
            what = f"{verdict['outcome']} [{verdict['rule']}] {verdict['title']}"
        print(f"  {what}{f'  x{len(entries)}' if len(entries) > 1 else ''}\n    {entries[0]['repro']}")
        if key in findings:
            finding = findings[key]
            print(f"    stored in {finding.folder} (minimized: {finding.minimized}):\n    {finding.repro}")
    replayed = [e for e in files if "verdict" in e]
    if replayed:
        print(f"{len(findings)} distinct finding(s) among the {len(replayed)} replayed; all files in summary.json")


@command("fuzz")
def main_fuzz(argv: list[str]) -> int:
    """Run the command: 0 when nothing was found, 1 with findings, 2 on misuse or when the fuzzer fails."""
    from harness.campaign.triage import artifact_kind
    from harness.runner.libfuzzer import (
        CORPUS_DIR,
        FuzzConfig,
        FuzzScriptMissing,
        fuzz_script,
        run_fuzzer,
        summary_json,
    )
    from harness.runner.replay import repro_command

    argv, extra = libfuzzer_flags(argv)
    args = parse(build_parser(), argv)
    try:
        fuzz_script(args.target)
    except FuzzScriptMissing as exc:
        raise Misuse(str(exc)) from None
    if args.budget_seconds <= 0 or args.jobs <= 0:
        raise Misuse("--budget-seconds and --jobs must be positive")
    corpus = (args.corpus or CORPUS_DIR / args.target).resolve()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = (args.out or Path("runs") / f"fuzz-{args.target}-{stamp}").resolve()
    faults = names(args.faults)
    config = FuzzConfig(
        target=args.target,
        out_dir=out,
        budget_s=args.budget_seconds,
        seed_corpus=[corpus] if corpus.is_dir() else [],
        driver=args.driver,
        faults=faults,
        jobs=args.jobs,
        keep_going=args.keep_going,
        timeout_s=args.timeout,
        extra_args=extra,
    )
    print(f"fuzzing {args.target} for {args.budget_seconds} s; driver {args.driver}, faults {faults or 'none'}")
    print(f"run folder {out}; seeds from {corpus if corpus.is_dir() else '(none)'}")
    status = StatusLine(args.target, args.budget_seconds, sys.stderr)
    run = run_fuzzer(config, status)
    status.end()
    stats = run.stats
    print(
        f"done in {run.elapsed:.1f} s: {stats.execs} executions ({stats.execs_per_second} exec/s), "
        f"coverage {stats.coverage}, corpus {stats.corpus}, {len(run.findings)} finding file(s)"
    )
    triaged = triage(args, out, faults, run.findings)
    files = []
    for path in run.findings:
        entry = {"file": str(path), "kind": artifact_kind(path)}
        entry["repro"] = repro_command(path, args.target, args.driver, faults)
        if path in triaged.verdicts:
            entry["verdict"] = triaged.verdicts[path].to_json()
        files.append(entry)
    _print_findings(files, triaged.findings)
    summary = summary_json(config, run, files)
    summary["distinct"] = [f.to_json(content=False) for f in triaged.findings.values()]
    summary["database"] = str(out / FINDINGS_DB) if (out / FINDINGS_DB).is_file() else None
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"summary: {out / 'summary.json'}")
    if run.findings:
        return EXIT_FINDINGS
    if run.exit_code not in (0, None) and not run.interrupted:
        tail = config.log_path.read_text(errors="replace").splitlines()[-15:]
        raise Misuse(f"the fuzzer exited with code {run.exit_code} without findings:\n" + "\n".join(tail))
    return EXIT_OK
