"""`nnfuzz evaluate --mutants N`: the harness against semantic mutants of the driver; the mutation score, time to
kill and every survivor with its diff, as a table and JSON; survivors matched against a triage file."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TextIO

from harness.cli.options import Misuse

EXIT_OK, EXIT_SURVIVORS = 0, 1
# Why a mutant may survive; "open" until someone looks.
REASONS = {
    "equivalent": "the mutant behaves as the original on every input",
    "unreachable": "no input through the HAL reaches the mutated code with the driver spec evaluated",
    "within_tolerance": "the change stays inside what the oracle accepts by definition (e.g. accuracy tolerance)",
    "conforming": "the mutant makes another choice the HAL leaves to the driver (a lower resource limit, more "
    "worker threads): it breaks no requirement, so no oracle may call it wrong",
    "open": "not triaged yet: possibly a gap of the harness",
}

# Which gap of the harness an open survivor shows (the gap_class of a triage entry).
GAP_CLASSES = {
    "1": "parameter values never leave their valid ranges",
    "2": "size caps hide whole code paths (tensors <= 256 elements / 4 per dim, short hash keys, small LSTMs)",
    "3": "no model of resource limits",
    "4": "exact results judged with a tolerance",
    "5": "memory handles always well formed (hardware-buffer descriptors, AHWB pools, unusable pools)",
    "6": "rounding bias invisible",
    "7": "valid structures the generators never build (an operation without a recipe, an IF without branch inputs, "
    "declared extensions, a subgraph without operations or outputs)",
    "8": "rare corner: today's generators can reach it, but with a probability too small for the budget",
    "9": "environment never varied: the cache folder's creation and permissions",
    "10": "timing: reported durations judged by their order only, clock boundaries at nanosecond resolution",
    "11": "lifecycle: a resource released twice",
    "12": "malformed HAL objects: Python objects of other classes or types standing in for HAL structures and fields",
}


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options of the mutation self-evaluation (on the evaluate command's parser)."""
    group = parser.add_argument_group("mutants", "evaluate the harness against semantic mutants of the driver")
    group.add_argument(
        "--mutants", type=int, metavar="N", help="sample N mutants of the driver package's source and hunt each"
    )
    group.add_argument(
        "--mutants-from",
        type=Path,
        metavar="FILE",
        help="hunt again exactly the mutants a report (--json of an earlier run) or a triage file records, on the "
        "current source: matched by key, or on the nearest line with the same text if their line moved; those whose "
        "code changed are reported as gone. Ids stay as recorded",
    )
    group.add_argument(
        "--ids", metavar="ID,ID", help="with --mutants-from: only these recorded mutants (e.g. M007,M042)"
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
            reason = _triaged(triage, r).get("reason", "open")
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


def _triaged(triage: dict[str, dict], row: dict) -> dict:
    """A row's triage entry: by its key, or by its recorded key when a replay found it on another line."""
    return triage.get(row["key"]) or triage.get(row.get("recorded_key") or "", {})


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
        known = _triaged(old, r)
        entry = {k: r[k] for k in ("key", "id", "file", "line", "operator", "before", "after")}
        entry.update(reason=known.get("reason", "open"), note=known.get("note", ""))
        if entry["reason"] == "open" and known.get("gap_class"):
            entry["gap_class"] = known["gap_class"]
        entry["diff"] = r["diff"]
        survivors.append(entry)
    by_reason = Counter(e["reason"] for e in survivors)
    by_class = Counter(e["gap_class"] for e in survivors if "gap_class" in e)
    summary = {
        "survivors": len(survivors),
        "by_reason": dict(sorted(by_reason.items())),
        "open_by_gap_class": {k: by_class[k] for k in GAP_CLASSES if k in by_class},
    }
    return {
        "command": command,
        "sample": config,
        "reasons": REASONS,
        "gap_classes": GAP_CLASSES,
        "summary": summary,
        "survivors": survivors,
    }


def _command(args: argparse.Namespace, targets: list[str], exclude: tuple[str, ...]) -> str:
    """The command that draws (or replays) and runs the same mutants (written into the triage file)."""
    from harness.drivers import DEFAULT_DRIVER
    from harness.runner import registered_targets

    if args.mutants_from is not None:
        words = ["nnfuzz evaluate", f"--mutants-from {args.mutants_from.as_posix()}"]
        words += [f"--ids {args.ids}"] if args.ids else []
    else:
        words = ["nnfuzz evaluate", f"--mutants {args.mutants}", f"--seed {args.seed}"]
    words += [f"--budget-seconds {args.budget_seconds:g}", f"--jobs {args.jobs}"]
    if sorted(targets) != sorted(registered_targets()):
        words.append("--targets " + " ".join(targets))
    if args.driver != DEFAULT_DRIVER:
        words.append(f"--driver {args.driver}")
    words += [f"--exclude '{glob}'" for glob in exclude if args.exclude is not None and args.mutants_from is None]
    return " ".join(words)


def _check(args: argparse.Namespace) -> None:
    """Refuse options that do not go together or out of range."""
    if args.mutants is not None and args.mutants_from is not None:
        raise Misuse("--mutants N and --mutants-from FILE do not go together: sample or replay")
    if args.ids is not None and args.mutants_from is None:
        raise Misuse("--ids needs --mutants-from FILE")
    if args.mutants is not None and args.mutants <= 0:
        raise Misuse(f"--mutants must be a positive number of mutants, not {args.mutants}")
    if args.mutants_from is not None and (args.seed != 0 or args.exclude is not None):
        raise Misuse("--seed and --exclude choose a sample; --mutants-from replays the recorded one")
    if args.jobs <= 0:
        raise Misuse(f"--jobs must be positive, not {args.jobs}")
    if args.budget_seconds <= 0:
        raise Misuse(f"--budget-seconds must be positive, not {args.budget_seconds:g}")
    if args.update_survivors and args.survivors is None:
        raise Misuse("--update-survivors needs --survivors FILE")


def _print_replay(played) -> None:
    """Where the recorded mutants were found, and which are gone."""
    moved = [f for f in played.found if f.moved]
    print(
        f"replaying {len(played.found) + len(played.gone)} recorded mutant(s) of {played.source}: "
        f"{len(played.found) - len(moved)} in place, {len(moved)} moved, {len(played.gone)} gone"
    )
    for f in moved:
        print(f"  moved {f.recorded.id}: {f.recorded.key} -> line {f.mutant.edit.line}")
    for g in played.gone:
        print(f"  GONE {g.recorded.id}: {g.recorded.key}: {g.why}")


def run(args: argparse.Namespace, targets: list[str]) -> int:
    """Sample (or replay) the mutants, run them, print and write the report; exit 1 if a survivor is untriaged."""
    from harness import mutants as mu
    from harness.cli.options import names
    from harness.runner import WorkerStartError

    _check(args)
    exclude = tuple(args.exclude) if args.exclude is not None else mu.DEFAULT_EXCLUDE
    triage = read_triage(args.survivors)
    played = None
    try:
        package, root = mu.package_root(args.driver)
        if args.mutants_from is not None:
            ids = names(args.ids) if args.ids is not None else None
            played = mu.replay_file(args.mutants_from, package, root, ids)
            exclude = tuple(played.config.get("exclude", exclude))
            _print_replay(played)
            mutants = played.mutants
            if not mutants:
                raise Misuse(f"none of the {len(played.gone)} recorded mutant(s) applies to the current source")
        else:
            mutants = mu.sample(package, root, args.mutants, args.seed, exclude)
    except (mu.SampleError, mu.ReplayError) as exc:
        raise Misuse(str(exc)) from None
    timeout = args.timeout if args.timeout is not None else mu.run.DEFAULT_TIMEOUT_S
    config = mu.Config(root, targets, args.driver, args.budget_seconds, timeout, args.jobs)
    files = mu.package_files(root, exclude)
    sample_config = {
        "package": package,
        "seed": args.seed if played is None else played.config.get("seed"),
        "mutants": len(mutants),
        "budget_s": args.budget_seconds,
        "timeout_s": timeout,
        "jobs": args.jobs,
        "driver": args.driver,
        "targets": targets,
        "exclude": list(exclude),
        "operators": list(mu.OPERATOR_NAMES),
        "fingerprint": mu.fingerprint(root, files),
    }
    if played is not None:
        sample_config["replay_of"] = played.source
    drawn = f"seed {args.seed}" if played is None else f"replayed from {played.source}"
    print(
        f"evaluating {len(mutants)} mutant(s) of {package} ({drawn}, {len(files)} files) with targets "
        f"{', '.join(targets)}: {args.budget_seconds:g} s each, {args.jobs} job(s)"
    )
    began = time.perf_counter()
    try:
        results = mu.run_mutants(mutants, config, Printer(sys.stdout))
    except WorkerStartError as exc:
        raise Misuse(f"the unmutated driver does not start: {exc}") from None
    rows = [r.to_json() for r in results]
    if played is not None:
        for row in rows:
            row["recorded_key"] = played.recorded_key(row["id"])
    summary = mu.summary(results, time.perf_counter() - began)
    _print_table(rows, summary, triage)
    if played is not None and played.gone:
        gone = ", ".join(g.recorded.id for g in played.gone)
        print(f"{len(played.gone)} recorded mutant(s) gone (their code changed): {gone}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report = {"config": sample_config, "summary": summary, "mutants": rows}
        if played is not None:
            report["replay"] = played.to_json()
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    if args.update_survivors:
        command = _command(args, targets, exclude)
        args.survivors.parent.mkdir(parents=True, exist_ok=True)
        data = triage_file(rows, sample_config, command, triage)
        args.survivors.write_text(json.dumps(data, indent=1) + "\n")
        triage = {e["key"]: e for e in data["survivors"]}
    open_survivors = [
        r for r in rows if r["status"] == "survived" and _triaged(triage, r).get("reason") in (None, "open")
    ]
    return EXIT_SURVIVORS if open_survivors or summary["errors"] else EXIT_OK
