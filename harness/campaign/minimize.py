"""Making a failing input smaller while it keeps failing the same way (the same verdict signature).

Two ways. Structural: the case JSON is reduced directly, each step kept only if the case still fails with the same
signature; the oracle judges every reduced case afresh, so a reduction cannot turn a case into a false finding (the
case format refuses a step that makes two inputs or two constants share bytes with different values, which would
leave the driver reading other values than the oracle is given). A
case whose model executes is first reduced as a graph (harness.reduce: operations isolated, cut or dropped,
dimensions shrunk, values and quantization simplified, every step a valid case), then, like every other case, by
dropping list elements (operations, operands, values, dimensions, paths, ...) and zeroing numbers. Raw: when
the case cannot be replayed from its JSON, libFuzzer's crash minimization shrinks the fuzzer bytes; it only
preserves "crashes", so the caller checks the signature of what it returns.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.campaign.workers import launched
from harness.reduce import GraphReduction, reduce_graph, reducible
from harness.runner.libfuzzer import fuzz_environment

# Parts of a case that say what it is rather than what it holds: never reduced.
FROZEN_KEYS = frozenset({"target", "version", "expect"})

Path_ = tuple  # a location in a JSON tree: keys and indexes from the root

# The share of the time left that the graph reduction may take; the generic reduction has the rest at least.
GRAPH_SHARE = 0.75


@dataclass
class Reduction:
    """What a structural reduction did."""

    case: dict
    runs: int
    accepted: int
    graph: GraphReduction | None = None  # the graph reduction that ran first, if the case's model executes

    def sizes(self) -> dict[str, int]:
        """The graph reduction's figures, as a finding's sizes record them (none without one)."""
        graph = self.graph
        if graph is None or graph.stopped == "not reducible":
            return {}
        return {
            "operations_before": graph.operations[0],
            "operations_after": graph.operations[1],
            "elements_before": graph.elements[0],
            "elements_after": graph.elements[1],
            "graph_runs": graph.runs,
            "graph_ms": round(graph.seconds * 1000),
        }


def reduce_structurally(case: dict, still_fails: Callable[[dict], bool], deadline: float) -> Reduction:
    """The graph reduction (for a case whose model executes), then the generic one on what it left (reduce_case)."""
    graph = None
    if reducible(case):
        graph_deadline = time.monotonic() + GRAPH_SHARE * max(deadline - time.monotonic(), 0.0)
        graph = reduce_graph(case, still_fails, deadline=graph_deadline)
        case = graph.case
    reduction = reduce_case(case, still_fails, deadline)
    if graph is None:
        return reduction
    return Reduction(reduction.case, reduction.runs + graph.runs, reduction.accepted + graph.accepted, graph)


def _lists(node: object, path: Path_ = ()) -> Iterator[Path_]:
    """Locations of the non-empty lists in a JSON tree, shallowest first."""
    queue: list[tuple[object, Path_]] = [(node, path)]
    while queue:
        value, where = queue.pop(0)
        if isinstance(value, dict):
            queue.extend((v, (*where, k)) for k, v in value.items() if not (not where and k in FROZEN_KEYS))
        elif isinstance(value, list):
            if value:
                yield where
            queue.extend((v, (*where, i)) for i, v in enumerate(value))


def _numbers(node: object, path: Path_ = ()) -> Iterator[Path_]:
    """Locations of the non-zero numbers (not booleans) in a JSON tree."""
    if isinstance(node, dict):
        for k, v in node.items():
            if not (not path and k in FROZEN_KEYS):
                yield from _numbers(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _numbers(v, (*path, i))
    elif isinstance(node, int | float) and not isinstance(node, bool) and node != 0:
        yield path


def _get(node: object, path: Path_) -> object:
    for step in path:
        node = node[step]  # type: ignore[index]
    return node


def _with(node: dict, path: Path_, value: object) -> dict:
    """A copy of the tree with the value at `path` replaced."""
    tree = copy.deepcopy(node)
    parent = _get(tree, path[:-1])
    parent[path[-1]] = value  # type: ignore[index]
    return tree


def reduce_case(case: dict, still_fails: Callable[[dict], bool], deadline: float, max_runs: int = 2000) -> Reduction:
    """A smaller case for which `still_fails` holds, reduced greedily until nothing helps or time runs out.

    `case` itself must fail; `still_fails` is called on candidates only (each a fresh copy).
    """
    current = copy.deepcopy(case)
    seen: set[str] = {json.dumps(current, sort_keys=True)}
    runs = accepted = 0

    def attempt(candidate: dict) -> bool:
        nonlocal runs, accepted
        key = json.dumps(candidate, sort_keys=True)
        if key in seen or runs >= max_runs or time.monotonic() >= deadline:
            return False
        seen.add(key)
        runs += 1
        if still_fails(candidate):
            accepted += 1
            return True
        return False

    def out_of_time() -> bool:
        return runs >= max_runs or time.monotonic() >= deadline

    progress = True
    while progress and not out_of_time():
        progress = False
        # Drop chunks of each list (halves, then quarters, ... then single elements), shallow lists first.
        for where in list(_lists(current)):
            try:
                items = _get(current, where)
            except (KeyError, IndexError, TypeError):
                continue  # an earlier reduction removed it
            if not isinstance(items, list):
                continue
            chunk = max(len(items) // 2, 1)
            while chunk >= 1 and not out_of_time():
                i = 0
                while i < len(items) and not out_of_time():
                    candidate = _with(current, where, items[:i] + items[i + chunk :])
                    if attempt(candidate):
                        current, items, progress = candidate, items[:i] + items[i + chunk :], True
                    else:
                        i += chunk
                chunk //= 2
        # Then zero the numbers that are left: whole lists of numbers at once, then one by one.
        for where in list(_lists(current)):
            items = _get(current, where)
            if isinstance(items, list) and items and all(_is_number(v) for v in items) and any(items):
                candidate = _with(current, where, [0 * v for v in items])
                if attempt(candidate):
                    current, progress = candidate, True
        for where in list(_numbers(current)):
            if out_of_time():
                break
            value = _get(current, where)
            candidate = _with(current, where, 0 * value)  # type: ignore[operator]
            if attempt(candidate):
                current, progress = candidate, True
    return Reduction(current, runs, accepted)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def libfuzzer_minimize(
    script: Path,
    data: bytes,
    work_dir: Path,
    driver: str,
    faults: Sequence[str],
    seconds: float,
    timeout_s: int,
) -> bytes | None:
    """libFuzzer's -minimize_crash on the input for at most `seconds`: the smallest crashing input it wrote, or None."""
    work_dir.mkdir(parents=True, exist_ok=True)
    original = work_dir / "input"
    smallest = work_dir / "minimized"
    original.write_bytes(data)
    smallest.unlink(missing_ok=True)
    step_s = max(int(seconds / 4), 1)
    command = [
        sys.executable,
        str(script),
        "-minimize_crash=1",
        f"-max_total_time={step_s}",
        "-runs=100000",
        f"-timeout={timeout_s}",
        f"-exact_artifact_path={smallest}",
        str(original),
    ]
    with open(work_dir / "minimize.log", "w") as log:
        process = subprocess.Popen(
            launched(command),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=fuzz_environment(driver, faults),
            cwd=work_dir,
            start_new_session=True,  # its re-executed steps share its process group: stopped together
        )
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            pass
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
    try:
        result = smallest.read_bytes()
    except FileNotFoundError:
        return None
    return result if result and len(result) < len(data) else None
