"""Replaying a saved input: reading it (raw fuzzer bytes or a case JSON), the `nnfuzz repro` command that replays
it, and writing a regression test for it."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.case import Case
from harness.drivers import DEFAULT_DRIVER
from harness.runner.execute import decode_bytes, registered_targets, resolve_target
from harness.runner.pool import RunResult


class InputError(ValueError):
    """The file cannot be replayed as given (harness misuse: say what to pass)."""


@dataclass
class SavedInput:
    """A saved input: the target it belongs to, the raw bytes (if it is fuzzer bytes) and the decoded case."""

    target: str  # a registered name or a module:attribute spec
    data: bytes | None
    case: Case | None  # None when the bytes decode to no case

    @property
    def payload(self) -> bytes | Case:
        """What the runner is given: the bytes themselves when there are some (decoded as the fuzzer did)."""
        return self.data if self.data is not None else self.case


def _as_case_json(raw: bytes) -> dict | None:
    if not raw.lstrip().startswith(b"{"):
        return None
    try:
        d = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return d if isinstance(d, dict) and "target" in d and "model" in d else None


def target_from_path(path: Path) -> str | None:
    """A registered target named by one of the file's folders: `<target>` or `fuzz-<target>-<time>`."""
    names = sorted(registered_targets(), key=len, reverse=True)
    for folder in path.resolve().parents:
        for name in names:
            if folder.name == name or folder.name.startswith(f"fuzz-{name}-"):
                return name
    return None


def load_input(path: Path, target: str | None = None) -> SavedInput:
    """Read a saved input; the target comes from `target`, the case JSON, or the file's folder names."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    case_json = _as_case_json(raw)
    if case_json is not None:
        case = Case.from_json(case_json)
        return SavedInput(target or case.target, None, case)
    name = target or target_from_path(path)
    if name is None:
        raise InputError(
            f"{path} is raw fuzzer input and none of its folders names a target: pass --target "
            f"({', '.join(sorted(registered_targets()))})"
        )
    return SavedInput(name, raw, decode_bytes(resolve_target(name), raw))


def shown_path(path: Path) -> str:
    """A path as a command line shows it: relative to the working directory when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def repro_command(path: Path, target: str, driver: str = DEFAULT_DRIVER, faults: Sequence[str] = ()) -> str:
    """The `nnfuzz repro` command line that replays a stored input or case JSON on a driver with faults."""
    words = ["nnfuzz", "repro", shown_path(path), "--target", target]
    # The defaults are left out, so that the line reads as what is particular to this input.
    if driver != DEFAULT_DRIVER:
        words += ["--driver", driver]
    if faults:
        words += ["--faults", ",".join(faults)]
    return shlex.join(words)


def _identifier(text: str) -> str:
    return re.sub(r"\W+", "_", text).strip("_").lower() or "case"


def pytest_source(
    target: str, case: Case, result: RunResult, driver: str, faults: Sequence[str], timeout_s: float
) -> str:
    """A pytest module that runs the case isolated and asserts SUCCESS: it fails for as long as the bug is there."""
    verdict = result.verdict
    name = _identifier(f"{case.target}_{verdict.rule or 'success'}_{verdict.signature}")
    case_text = json.dumps(case.to_json(), indent=1, sort_keys=True)
    lines = [
        f'"""Regression test: {verdict.outcome.value} [{verdict.rule}] {verdict.title}',
        "",
        "Written by `nnfuzz repro --emit-pytest`; it passes once the driver no longer fails this case.",
        '"""',
        "",
        "import json",
        "",
        "from harness.oracle.verdict import Outcome",
        "from harness.runner import run_isolated",
        "",
        f"TARGET = {target!r}",
        f"DRIVER = {driver!r}",
        f"FAULTS = {list(faults)!r}",
        f"TIMEOUT_S = {timeout_s!r}",
        "CASE = json.loads(",
        f"    r'''{case_text}'''",
        ")",
        "",
        "",
        f"def test_{name}() -> None:",
        "    result = run_isolated(TARGET, CASE, DRIVER, FAULTS, TIMEOUT_S)",
        "    verdict = result.verdict",
        '    assert verdict.outcome == Outcome.SUCCESS, f"[{verdict.rule}] {verdict.title}: {verdict.details}"',
        "",
    ]
    if "'''" in case_text:
        raise InputError("the case JSON contains ''' and cannot be embedded in a raw string")
    return "\n".join(lines)
