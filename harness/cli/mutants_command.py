"""`nnfuzz evaluate --mutants N`: the harness against semantic mutants of the driver; the mutation score, time to
kill and every survivor with its diff, as a table and JSON; survivors matched against a triage file."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TextIO

from harness.cli.options import Misuse

EXIT_OK, EXIT_SURVIVORS = 0, 1
# Why a mutant may survive; "open" until someone looks.
REASONS = {
    "equivalent": "the mutant behaves as the original on every input",
    "unreachable": "no input through the HAL reaches the mutated code with the driver spec evaluated",
    "within_tolerance": "the change stays inside what the oracle accepts by definition (e.g. accuracy tolerance)",
    "open": "not triaged yet: possibly a gap of the harness",
}


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options of the mutation self-evaluation (on the evaluate command's parser)."""
    group = parser.add_argument_group("mutants", "evaluate the harness against semantic mutants of the driver")
    group.add_argument(
        "--mutants", type=int, metavar="N", help="sample N mutants of the driver package's source and hunt each"
    )
    group.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the sample (default 0)")
    group.add_argument("--jobs", type=int, default=1, metavar="J", help="mutants run in parallel (default 1)")
    group.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="files of the package not to mutate, relative to it; repeatable (default: faults.py and the backends "
        "the bundled driver's default spec never runs: backends/litert/*, backends/onnxruntime/*, "
        "backends/_operation.py)",
    )
    group.add_argument(
        "--survivors",
        type=Path,
        metavar="FILE",
        help="triage file: survivors it gives a reason other than 'open' do not fail the run",
    )
    group.add_argument(
        "--update-survivors", action="store_true", help="rewrite the --survivors file with this run's survivors"
    )


class Printer:
    """Prints the mutants' events: a live line on a terminal, a line per mutant."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.interactive = stream.isatty()

    def __call__(self, event) -> None:
        """Print one event."""
        from harness import mutants as mu

        w = self.stream.write
        clear = "\r\x1b[K" if self.interactive else ""
        if isinstance(event, mu.MutantProgress) and self.interactive:
            w(f"{clear}{event.mutant.id}: {event.seconds:5.1f} s, {event.cases} cases")
        elif isinstance(event, mu.MutantDone):
            r = event.result
            w(f"{clear}[{event.done}/{event.total}] {r.mutant.id} {r.mutant.location} {_change(r.mutant)}: ")
            w(f"{_outcome(r)}\n")
        self.stream.flush()


def _change(mutant) -> str:
    e = mutant.edit
    before = e.before if len(e.before) <= 40 else e.before[:37] + "..."
    return f"{e.operator} {before!r} -> {e.after!r}"


def _outcome(r) -> str:
    from harness import mutants as mu

    if r.status == mu.KILLED:
        return f"KILLED in {r.seconds:.2f} s by {r.target} [{r.rule}]"
    if r.status == mu.KILLED_AT_START:
        return f"KILLED at start: {r.detail}"
    if r.status == mu.ERROR:
        return f"ERROR: {r.detail}"
    return f"survived {r.cases} cases" + (f" ({r.false_alarms} false alarm(s))" if r.false_alarms else "")


def _print_table(rows: list[dict], summary: dict, triage: dict[str, dict]) -> None:
    where = [f"{r['file']}:{r['line']}" for r in rows]
    width = max((len(w) for w in where), default=9)
    print(f"\n{'mutant':6}  {'file:line':{width}}  {'operator':16} {'killed':7} {'seconds':>8}  target / rule")
    for r, w in zip(rows, where):
        killed = {"killed": "yes", "killed_at_start": "start", "survived": "NO", "error": "error"}[r["status"]]
        seconds = f"{r['seconds']:8.2f}" if r["seconds"] is not None else f"{'-':>8}"
        by = f"{r['target']} [{r['rule']}]" if r["status"] == "killed" else r["detail"][:60] or "-"
        print(f"{r['id']:6}  {w:{width}}  {r['operator']:16} {killed:7} {seconds}  {by}")
    for r in rows:
        if r["status"] == "survived":
            reason = triage.get(r["key"], {}).get("reason", "open")
            print(f"\nsurvivor {r['id']} ({reason}): {r['key']}\n{r['diff']}", end="")
    s = summary
    score = "-" if s["score"] is None else f"{100 * s['score']:.1f}%"
    past = "-" if s["score_past_start"] is None else f"{100 * s['score_past_start']:.1f}%"
    median = "-" if s["median_seconds_to_kill"] is None else f"{s['median_seconds_to_kill']:.2f} s"
    print(
        f"\n{s['mutants']} mutants: {s['killed']} killed, {s['killed_at_start']} killed at start, "
        f"{s['survived']} survived, {s['errors']} error(s); mutation score {score} ({past} of those that start); "
        f"median time to kill {median}; wall time {s['wall_s']:.0f} s"
    )


def read_triage(path: Path | None) -> dict[str, dict]:
    """The survivors a triage file lists, by mutant key ({} when there is no file)."""
    if path is None or not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        entries = {e["key"]: e for e in data["survivors"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise Misuse(f"cannot read the survivors file {path}: {exc}") from None
    bad = sorted({e.get("reason") for e in entries.values()} - set(REASONS), key=str)
    if bad:
        raise Misuse(f"{path}: unknown reason(s) {bad}; choose from {', '.join(REASONS)}")
    return entries


def triage_file(rows: list[dict], config: dict, command: str, old: dict[str, dict]) -> dict:
    """The triage file of a run's survivors, keeping the reason and note already given to a mutant's key."""
    survivors = []
    for r in rows:
        if r["status"] != "survived":
            continue
        known = old.get(r["key"], {})
        entry = {k: r[k] for k in ("key", "id", "file", "line", "operator", "before", "after")}
        entry.update(reason=known.get("reason", "open"), note=known.get("note", ""), diff=r["diff"])
        survivors.append(entry)
    return {"command": command, "sample": config, "reasons": REASONS, "survivors": survivors}


def _command(args: argparse.Namespace, targets: list[str], exclude: tuple[str, ...]) -> str:
    """The command that draws and runs the same sample (written into the triage file)."""
    from harness.drivers import DEFAULT_DRIVER
    from harness.runner import registered_targets

    words = ["nnfuzz evaluate", f"--mutants {args.mutants}", f"--seed {args.seed}"]
    words += [f"--budget-seconds {args.budget_seconds:g}", f"--jobs {args.jobs}"]
    if sorted(targets) != sorted(registered_targets()):
        words.append("--targets " + " ".join(targets))
    if args.driver != DEFAULT_DRIVER:
        words.append(f"--driver {args.driver}")
    words += [f"--exclude '{glob}'" for glob in exclude if args.exclude is not None]
    return " ".join(words)


def run(args: argparse.Namespace, targets: list[str]) -> int:
    """Sample the mutants, run them, print and write the report; exit 1 if a survivor is untriaged."""
    from harness import mutants as mu
    from harness.runner import WorkerStartError

    if args.mutants <= 0:
        raise Misuse(f"--mutants must be a positive number of mutants, not {args.mutants}")
    if args.jobs <= 0:
        raise Misuse(f"--jobs must be positive, not {args.jobs}")
    if args.budget_seconds <= 0:
        raise Misuse(f"--budget-seconds must be positive, not {args.budget_seconds:g}")
    if args.update_survivors and args.survivors is None:
        raise Misuse("--update-survivors needs --survivors FILE")
    exclude = tuple(args.exclude) if args.exclude is not None else mu.DEFAULT_EXCLUDE
    triage = read_triage(args.survivors)
    try:
        package, root = mu.package_root(args.driver)
        sample = mu.sample(package, root, args.mutants, args.seed, exclude)
    except mu.SampleError as exc:
        raise Misuse(str(exc)) from None
    timeout = args.timeout if args.timeout is not None else mu.run.DEFAULT_TIMEOUT_S
    config = mu.Config(root, targets, args.driver, args.budget_seconds, timeout, args.jobs)
    files = mu.package_files(root, exclude)
    sample_config = {
        "package": package,
        "seed": args.seed,
        "mutants": args.mutants,
        "budget_s": args.budget_seconds,
        "timeout_s": timeout,
        "jobs": args.jobs,
        "driver": args.driver,
        "targets": targets,
        "exclude": list(exclude),
        "operators": list(mu.OPERATOR_NAMES),
        "fingerprint": mu.fingerprint(root, files),
    }
    print(
        f"evaluating {args.mutants} mutant(s) of {package} (seed {args.seed}, {len(files)} files) with targets "
        f"{', '.join(targets)}: {args.budget_seconds:g} s each, {args.jobs} job(s)"
    )
    began = time.perf_counter()
    try:
        results = mu.run_mutants(sample, config, Printer(sys.stdout))
    except WorkerStartError as exc:
        raise Misuse(f"the unmutated driver does not start: {exc}") from None
    rows = [r.to_json() for r in results]
    summary = mu.summary(results, time.perf_counter() - began)
    _print_table(rows, summary, triage)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report = {"config": sample_config, "summary": summary, "mutants": rows}
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    if args.update_survivors:
        command = _command(args, targets, exclude)
        args.survivors.parent.mkdir(parents=True, exist_ok=True)
        data = triage_file(rows, sample_config, command, triage)
        args.survivors.write_text(json.dumps(data, indent=1) + "\n")
        triage = {e["key"]: e for e in data["survivors"]}
    open_survivors = [
        r for r in rows if r["status"] == "survived" and triage.get(r["key"], {}).get("reason") in (None, "open")
    ]
    return EXIT_SURVIVORS if open_survivors or summary["errors"] else EXIT_OK
