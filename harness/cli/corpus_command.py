"""`nnfuzz corpus`: the seeds and working corpus of each target, their sizes and coverage; minimizing a working
corpus and promoting a few of its entries into the seeds, only when asked.

A thin front end over harness.campaign.corpora: the options name the targets and folders; the figures are printed
as a table (and written as JSON with --json).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TextIO

from harness.cli.options import Misuse, add_driver, command, fuzz_targets, names, parse

EXIT_OK = 0


def build_parser() -> argparse.ArgumentParser:
    """The options of the corpus command."""
    parser = argparse.ArgumentParser(
        prog="nnfuzz corpus",
        description="Show per target the seeds (corpus/TARGET, committed) and the working corpus campaigns grow "
        "(runs/corpus/TARGET): entries, size, and the driver's branches each reaches (measured by replaying them "
        "under coverage.py). --minimize shrinks working corpora with libFuzzer -merge=1; --promote copies into the "
        "seeds the fewest working-corpus entries that keep the coverage of seeds and working corpus together.",
    )
    parser.add_argument("--targets", nargs="+", metavar="T", help="targets, e.g. validation,execution (default all)")
    parser.add_argument(
        "--corpus", type=Path, metavar="DIR", help="seed corpus root (default: the repository's corpus/)"
    )
    parser.add_argument(
        "--work-corpus",
        type=Path,
        metavar="DIR",
        help="working corpus root (default NNFUZZ_WORK_CORPUS or runs/corpus)",
    )
    add_driver(parser, "driver to measure coverage on")
    parser.add_argument("--minimize", action="store_true", help="minimize the working corpora (libFuzzer -merge=1)")
    parser.add_argument(
        "--promote", action="store_true", help="copy a small coverage-preserving set of working entries into the seeds"
    )
    parser.add_argument("--no-coverage", action="store_true", help="sizes only: do not replay anything")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the figures as JSON to OUT")
    return parser


class _Progress:
    """Replay progress on stderr: rewritten in place on a terminal, every few seconds otherwise."""

    def __init__(self, stream: TextIO, what: str) -> None:
        self.stream, self.what = stream, what
        self.last = 0.0
        self.shown = -1

    def __call__(self, done: int, total: int) -> None:
        if done == self.shown or self.shown >= total:
            return
        now = time.monotonic()
        text = f"  {self.what}: {done} of {total} entries replayed"
        if self.stream.isatty():
            self.stream.write("\r\x1b[K" + text + ("\n" if done >= total else ""))
            self.stream.flush()
            self.shown = done
        elif done >= total or now - self.last >= 10.0:
            self.last, self.shown = now, done
            print(text, file=self.stream, flush=True)


def _kib(n: int) -> str:
    return f"{n / 1024:,.0f}"


def _num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def print_survey(survey, out: TextIO) -> None:
    """The table of a Survey."""
    head = f"{'target':15} {'seeds':>7} {'KiB':>6} {'working':>8} {'KiB':>7}"
    print(f"{head}  {'branches: seeds':>16} {'seeds+working':>14}", file=out)
    for t in survey.targets:
        print(
            f"{t.target:15} {t.seeds:>7,} {_kib(t.seed_bytes):>6} {t.working:>8,} {_kib(t.working_bytes):>7}  "
            f"{_num(t.seed_branches):>16} {_num(t.branches):>14}",
            file=out,
        )
    if survey.branches is not None:
        print(
            f"{'all targets':15} {sum(t.seeds for t in survey.targets):>7,} {'':>6} "
            f"{sum(t.working for t in survey.targets):>8,} {'':>7}  {_num(survey.seed_branches):>16} "
            f"{_num(survey.branches):>14}   of {_num(survey.branches_total)} branches of the driver",
            file=out,
        )
    if survey.coverage_detail:
        print(f"coverage: {survey.coverage_detail}", file=out)


@command("corpus")
def main_corpus(argv: list[str], stream: TextIO | None = None) -> int:
    """Run the command: 0 done, 2 misuse."""
    from harness.campaign import TargetSpec
    from harness.campaign.config import default_work_corpus
    from harness.campaign.corpora import minimize, promote, survey
    from harness.runner.libfuzzer import CORPUS_DIR

    err = stream or sys.stderr
    args = parse(build_parser(), argv)
    targets = fuzz_targets(names(args.targets), "corpus")
    seed_root = (args.corpus or CORPUS_DIR).resolve()
    work_root = (args.work_corpus or default_work_corpus()).resolve()
    for option, folder in (("--corpus", seed_root), ("--work-corpus", work_root)):
        if folder.exists() and not folder.is_dir():
            raise Misuse(f"{option} {folder} is not a folder")
    specs = [TargetSpec.named(n) for n in targets]
    document: dict = {"seed_corpus": str(seed_root), "work_corpus": str(work_root), "driver": args.driver}

    if args.minimize:
        print(f"minimizing the working corpora in {work_root} (libFuzzer -merge=1)", file=err, flush=True)
        done = []
        for spec in specs:
            print(f"  {spec.name}: merging its working corpus over its seeds ...", file=err, flush=True)
            m = minimize(spec, seed_root, work_root, args.driver)
            how = "" if m.ok else f" (not minimized: {m.detail})"
            print(f"  {spec.name}: {m.before} -> {m.after} entries{how}", file=err, flush=True)
            done.append(m.__dict__)
        document["minimized"] = done
    if args.promote:
        print(f"choosing working-corpus entries to promote into {seed_root}", file=err, flush=True)
        promoted = promote(specs, seed_root, work_root, args.driver, progress=_Progress(err, "promotion"))
        for p in promoted:
            if p.ok:
                print(
                    f"  {p.target}: {len(p.entries)} entries promoted; the seeds reach {_num(p.seed_branches_before)} "
                    f"-> {_num(p.seed_branches_after)} branches",
                    file=err,
                    flush=True,
                )
            else:
                print(f"  {p.target}: nothing promoted ({p.detail})", file=err, flush=True)
        document["promoted"] = [p.__dict__ for p in promoted]
    progress = None if args.no_coverage else _Progress(err, "coverage")
    result = survey(specs, seed_root, work_root, args.driver, coverage=not args.no_coverage, progress=progress)
    print_survey(result, sys.stdout)
    document["survey"] = result.to_json()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=1) + "\n")
    return EXIT_OK
