"""`nnfuzz fuzz TARGET`: run one Atheris fuzz script for a time budget, with a live status line; list the findings."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from harness.drivers import DEFAULT_DRIVER

EXIT_OK, EXIT_FINDINGS, EXIT_MISUSE = 0, 1, 2
DEFAULT_TRIAGE = 20


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
    parser.add_argument(
        "--driver",
        default=os.environ.get("NNFUZZ_DRIVER") or DEFAULT_DRIVER,
        metavar="MODULE:FACTORY",
        help=f"driver to fuzz (default: NNFUZZ_DRIVER or {DEFAULT_DRIVER})",
    )
    parser.add_argument("--faults", default=os.environ.get("NNFUZZ_FAULTS", ""), help="faults to start it with, a,b")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="fuzzing processes (libFuzzer -fork=N)")
    parser.add_argument("--keep-going", action="store_true", help="go on after a finding (always so with --jobs > 1)")
    parser.add_argument("--timeout", type=int, default=10, metavar="S", help="time limit of one input (default 10)")
    parser.add_argument(
        "--triage",
        type=int,
        default=DEFAULT_TRIAGE,
        metavar="N",
        help=f"replay up to N findings isolated to name their rule and deduplicate (default {DEFAULT_TRIAGE}; 0: none)",
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


def triage(files: list[Path], target: str, driver: str, faults: Sequence[str], limit: int, timeout_s: float) -> dict:
    """Replay up to `limit` findings isolated: {file name: verdict JSON} (missing for those not replayed)."""
    from harness.runner import WorkerPool, WorkerStartError

    verdicts: dict[str, dict] = {}
    if limit <= 0 or not files:
        return verdicts
    try:
        with WorkerPool(driver, faults, timeout_s) as pool:
            for path in files[:limit]:
                verdicts[path.name] = pool.run(target, path.read_bytes()).verdict.to_json()
    except WorkerStartError as exc:
        print(f"nnfuzz fuzz: cannot replay the findings: {exc}", file=sys.stderr)
    return verdicts


def _print_findings(findings: list[dict]) -> None:
    """One entry per distinct verdict (replayed findings), then those not replayed, each with a repro command."""
    groups: dict[str, list[dict]] = {}
    for entry in findings:
        verdict = entry.get("verdict")
        key = verdict["signature"] if verdict else f"unreplayed-{entry['kind']}"
        groups.setdefault(key, []).append(entry)
    for entries in groups.values():
        verdict = entries[0].get("verdict")
        if verdict is None:
            what = f"{entries[0]['kind']} (not replayed)"
        elif verdict["outcome"] == "SUCCESS":
            what = "does not reproduce in isolation (passes when replayed alone)"
        else:
            what = f"{verdict['outcome']} [{verdict['rule']}] {verdict['title']}"
        print(f"  {what}{f'  x{len(entries)}' if len(entries) > 1 else ''}\n    {entries[0]['repro']}")
    replayed = [e for e in findings if "verdict" in e]
    if replayed:
        distinct = {e["verdict"]["signature"] for e in replayed if e["verdict"]["outcome"] != "SUCCESS"}
        print(f"{len(distinct)} distinct finding(s) among the {len(replayed)} replayed; all files in summary.json")


def main_fuzz(argv: list[str]) -> int:
    """Run the command: 0 when nothing was found, 1 with findings, 2 on misuse or when the fuzzer fails."""
    from harness.runner.libfuzzer import (
        CORPUS_DIR,
        FuzzConfig,
        FuzzScriptMissing,
        fuzz_script,
        run_fuzzer,
        summary_json,
    )
    from harness.runner.replay import repro_command

    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        fuzz_script(args.target)
    except FuzzScriptMissing as exc:
        print(f"nnfuzz fuzz: {exc}", file=sys.stderr)
        return EXIT_MISUSE
    if args.budget_seconds <= 0 or args.jobs <= 0:
        print("nnfuzz fuzz: --budget-seconds and --jobs must be positive", file=sys.stderr)
        return EXIT_MISUSE
    corpus = (args.corpus or CORPUS_DIR / args.target).resolve()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = (args.out or Path("runs") / f"fuzz-{args.target}-{stamp}").resolve()
    faults = [f.strip() for f in args.faults.split(",") if f.strip()]
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
    verdicts = triage(run.findings, args.target, args.driver, faults, args.triage, max(args.timeout, 1))
    findings = []
    for path in run.findings:
        entry = {"file": str(path), "kind": path.name.split("-", 1)[0]}
        entry["repro"] = repro_command(path, args.target, args.driver, faults)
        if path.name in verdicts:
            entry["verdict"] = verdicts[path.name]
        findings.append(entry)
    _print_findings(findings)
    summary = summary_json(config, run, findings)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"summary: {out / 'summary.json'}")
    if run.findings:
        return EXIT_FINDINGS
    if run.exit_code not in (0, None) and not run.interrupted:
        tail = config.log_path.read_text(errors="replace").splitlines()[-15:]
        print(f"nnfuzz fuzz: the fuzzer exited with code {run.exit_code} without findings:", file=sys.stderr)
        print("\n".join(tail), file=sys.stderr)
        return EXIT_MISUSE
    return EXIT_OK
