"""`nnfuzz campaign`: fuzz every target for a shared time budget, triage what is found, report.

A thin front end: the options become a CampaignConfig for harness.campaign, whose events are printed here.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.cli.options import Misuse, add_driver, add_faults, command, fuzz_targets, libfuzzer_flags, names, parse

if TYPE_CHECKING:
    from harness.campaign import CampaignConfig

EXIT_OK, EXIT_FINDINGS, EXIT_INTERRUPTED = 0, 1, 130
FAIL_ON = ("never", "new", "any")


def build_parser() -> argparse.ArgumentParser:
    """The options of the campaign command."""
    parser = argparse.ArgumentParser(
        prog="nnfuzz campaign",
        description="Fuzz the targets with their Atheris scripts as libFuzzer worker processes sharing a time budget, "
        "starting from the seeds (corpus/TARGET, never written) and the working corpus earlier campaigns grew "
        "(runs/corpus/TARGET), which keeps what this one finds; triage every crash into a deduplicated, minimized "
        "finding recorded in the findings database; measure the driver's branch coverage; write report.json, "
        "report.html and the line-by-line coverage in the run folder. libFuzzer flags for every worker may follow "
        "'--'. `nnfuzz corpus` shows, minimizes and promotes the working corpora.",
    )
    parser.add_argument(
        "--budget-seconds", type=float, metavar="N", help="fuzzing time, wall clock (default 180; with --resume: kept)"
    )
    parser.add_argument(
        "--targets", nargs="+", metavar="T", help="targets to fuzz, e.g. validation,execution (default all)"
    )
    parser.add_argument(
        "--jobs", type=int, metavar="N", help=f"worker processes at once (default: all cores, {os.cpu_count()})"
    )
    add_driver(parser, "driver to fuzz")
    add_faults(parser)
    parser.add_argument("--out", type=Path, metavar="DIR", help="run folder (default runs/TIMESTAMP/)")
    parser.add_argument(
        "--corpus",
        type=Path,
        metavar="DIR",
        help="seed corpus root: seeds from DIR/TARGET, read only (default: the repository's corpus/)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--work-corpus",
        type=Path,
        metavar="DIR",
        help="working corpus root: DIR/TARGET is read at the start and keeps what is found, shared by every "
        "campaign given it (default: NNFUZZ_WORK_CORPUS or runs/corpus; with --faults: the run folder's own)",
    )
    where.add_argument(
        "--fresh-corpus",
        action="store_true",
        help="start from the seeds alone and keep what is found in the run folder (share no working corpus)",
    )
    parser.add_argument("--resume", type=Path, metavar="DIR", help="continue the campaign in DIR with its settings")
    parser.add_argument(
        "--db", type=Path, metavar="PATH", help="findings database (default NNFUZZ_FINDINGS_DB or runs/findings.sqlite)"
    )
    parser.add_argument("--timeout", type=int, metavar="S", help="time limit of one input (default 20)")
    parser.add_argument(
        "--minimize-seconds", type=float, metavar="S", help="minimization time per new finding (default 30)"
    )
    parser.add_argument("--no-coverage", action="store_true", help="skip the coverage measurement")
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="new",
        help="exit 1 when the campaign found new findings (new, the default), any finding (any), or never",
    )
    return parser


class Printer:
    """Prints a campaign's events: a live status line on a terminal, a line every few seconds otherwise."""

    def __init__(self, stream: TextIO, every_s: float = 10.0) -> None:
        self.stream = stream
        self.interactive = stream.isatty()
        self.every_s = every_s
        self._last_line = -every_s
        self._live = False
        self._last_progress = 0.0
        self._shown = ""
        self.new = self.known = 0

    def _line(self, text: str) -> None:
        if self._live:
            self.stream.write("\r\x1b[K")
            self._live = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def __call__(self, event) -> None:
        """Print one event."""
        from harness.campaign import events as ev

        if isinstance(event, ev.CampaignStarted):
            verb = "resuming" if event.resumed else "starting"
            self._line(
                f"{verb} campaign {event.run_dir}\n  targets {', '.join(event.targets)}; {event.jobs} job(s); "
                f"budget {event.budget_s:g} s ({event.remaining_s:.0f} s left); driver {event.driver}, faults "
                f"{', '.join(event.faults) or 'none'}"
            )
        elif isinstance(event, ev.PhaseStarted):
            self._line(f"== {event.phase}{': ' + event.detail if event.detail else ''}")
        elif isinstance(event, ev.KnownRechecked):
            f = event.finding
            self._line(f"  known finding {f.signature} ({f.target} [{f.rule}]): {event.status}")
        elif isinstance(event, ev.Tick):
            self._tick(event)
        elif isinstance(event, ev.WorkerEnded) and event.reason == "error":
            self._line(f"  {event.target}: a worker exited with code {event.exit_code} (log {event.log})")
        elif isinstance(event, ev.FindingReported):
            self._finding(event)
        elif isinstance(event, ev.Unreproduced):
            self._line(f"  {event.target}: {event.artifact} passes when replayed alone (kept, not a finding)")
        elif isinstance(event, ev.CorpusLoaded):
            self._line(
                f"  {event.target}: {event.seeds} seeds ({event.seed_folder}), {event.carried} working-corpus "
                f"entries carried ({event.working_folder})"
            )
        elif isinstance(event, ev.CoverageProgress):
            self._progress(f"  replayed {event.done} of {event.total} corpus entries", event.done >= event.total)
        elif isinstance(event, ev.CoverageMeasured):
            if event.ok and event.total:
                share = 100.0 * event.covered / event.total
                self._line(
                    f"  driver branch coverage: {event.covered} of {event.total} branches ({share:.1f} %); "
                    f"{event.start} at the start (seeds and carried entries)"
                )
                if event.html:
                    self._line(f"  line by line: {event.html}")
            else:
                self._line(f"  coverage not measured: {event.detail}")
        elif isinstance(event, ev.ReportWritten):
            self._line(f"report: {event.html_path}\n        {event.json_path}")
        elif isinstance(event, ev.CampaignDone):
            how = "stopped early" if event.interrupted else "done"
            self._line(f"campaign {how}: {event.new} new, {event.known} still reproducing, {event.fixed} fixed")

    def _progress(self, text: str, last: bool) -> None:
        """A progress line: rewritten in place on a terminal, every few seconds (and the last one) otherwise."""
        if text == self._shown:
            return
        now = time.monotonic()
        if self.interactive:
            self.stream.write("\r\x1b[K" + text)
            self.stream.flush()
            self._live, self._shown = True, text
        elif last or now - self._last_progress >= self.every_s:
            self._last_progress, self._shown = now, text
            self._line(text)

    def _finding(self, event) -> None:
        if event.kind == "duplicate":
            return
        if event.kind == "new":
            self.new += 1
            head = "NEW finding"
        else:
            self.known += 1
            head = "known finding, found again"
        f = event.finding
        self._line(f"{head} {f.signature}: {f.target} {f.outcome} [{f.rule}] {f.title}\n    {f.folder}\n    {f.repro}")

    def _tick(self, event) -> None:
        parts = []
        for name, s in event.targets.items():
            running = f"{s.execs_per_second}/s" if s.workers else "idle"
            parts.append(
                f"{name} {running} execs {s.execs} corp {s.corpus} ft {s.features if s.features is not None else '-'}"
                f" finds {s.findings}"
            )
        line = f"[{event.elapsed_s:4.0f}/{event.budget_s:.0f}s] " + " | ".join(parts)
        if self.interactive:
            width = os.get_terminal_size(self.stream.fileno()).columns if self.stream.isatty() else 200
            self.stream.write("\r\x1b[K" + line[: max(width - 1, 40)])
            self.stream.flush()
            self._live = True
        elif event.elapsed_s - self._last_line >= self.every_s:
            self._last_line = event.elapsed_s
            self._line(line)


def make_config(args: argparse.Namespace, extra: list[str]) -> CampaignConfig:
    """The CampaignConfig the options describe (Misuse naming a wrong option)."""
    from harness.campaign import CampaignConfig, TargetSpec, default_db_path, new_run_dir
    from harness.campaign.config import default_work_corpus
    from harness.runner.libfuzzer import CORPUS_DIR

    if args.resume is not None:
        settings = args.resume / "campaign.json"
        if not settings.is_file():
            raise Misuse(f"{args.resume} holds no campaign (no campaign.json) to resume")
        config = CampaignConfig.from_json(json.loads(settings.read_text()))
        config.out_dir = args.resume.resolve()
        for option, attr in (("budget_seconds", "budget_s"), ("jobs", "jobs")):
            if getattr(args, option) is not None:
                setattr(config, attr, getattr(args, option))
        return config
    targets = fuzz_targets(names(args.targets), "campaign")
    out = (args.out or new_run_dir()).resolve()
    if (out / "campaign.json").is_file():
        raise Misuse(f"{out} holds a campaign already: resume it with --resume {out}")
    faults = names(args.faults)
    # Entries grown on a driver with planted faults stay in the run folder unless a working corpus is named.
    if args.work_corpus is not None:
        work_corpus = args.work_corpus.resolve()
    elif args.fresh_corpus or faults:
        work_corpus = None
    else:
        work_corpus = default_work_corpus().resolve()
    if work_corpus is not None and work_corpus.exists() and not work_corpus.is_dir():
        raise Misuse(f"--work-corpus {work_corpus} is not a folder")
    config = CampaignConfig(
        targets=[TargetSpec.named(n) for n in targets],
        out_dir=out,
        driver=args.driver,
        faults=faults,
        corpus_root=(args.corpus or CORPUS_DIR).resolve(),
        work_corpus=work_corpus,
        db_path=(args.db or default_db_path()).resolve(),
        extra_args=extra,
        coverage=not args.no_coverage,
    )
    if args.budget_seconds is not None:
        config.budget_s = args.budget_seconds
    if args.jobs is not None:
        config.jobs = args.jobs
    if args.timeout is not None:
        config.timeout_s = args.timeout
    if args.minimize_seconds is not None:
        config.minimize_s = args.minimize_seconds
    return config


@command("campaign")
def main_campaign(argv: list[str], stream: TextIO | None = None) -> int:
    """Run the command: 0 done, 1 findings (see --fail-on), 2 misuse, 130 stopped before the report."""
    from harness.campaign import Campaign, CampaignError, FindingsDBError
    from harness.campaign.folder import atomic_write_json

    argv, extra = libfuzzer_flags(argv)
    args = parse(build_parser(), argv)
    config = make_config(args, extra)
    if config.budget_s <= 0 or config.jobs <= 0:
        raise Misuse("--budget-seconds and --jobs must be positive")
    if args.resume is not None:
        atomic_write_json(config.out_dir / "campaign.json", config.to_json())
    printer = Printer(stream or sys.stderr)
    try:
        campaign = Campaign(config, printer)
    except FindingsDBError as exc:
        raise Misuse(str(exc)) from None
    # SIGTERM (a CI job's timeout, `kill`) stops the campaign like Ctrl-C does.
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler) if in_main else None
    try:
        report = campaign.run_campaign()
    except CampaignError as exc:
        raise Misuse(str(exc)) from None
    except KeyboardInterrupt:
        print(f"\nnnfuzz campaign: stopped; continue with: nnfuzz campaign --resume {config.out_dir}", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
    if not report:
        print(f"nnfuzz campaign: stopped; continue with: nnfuzz campaign --resume {config.out_dir}", file=sys.stderr)
        return EXIT_INTERRUPTED
    counts = report["totals"]["findings"]
    if campaign.interrupted:
        print(f"stopped early; continue with: nnfuzz campaign --resume {config.out_dir}", file=sys.stderr)
    if args.fail_on == "new" and counts["new"]:
        return EXIT_FINDINGS
    if args.fail_on == "any" and (counts["new"] or counts["reproducing"]):
        return EXIT_FINDINGS
    return EXIT_OK
