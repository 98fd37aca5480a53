"""Replaying a recorded sample: the mutants a report or a triage file names, found again in the current source.

A seed draws a sample from the whole package's source, so any edit of the driver changes what it draws. A replay
instead takes the recorded mutants one by one: each is matched by its key (file, line, column, operator, the text
before and after) where its line still reads as recorded, or else by the same file, operator, column and texts on the
nearest line whose text is the recorded line's. A mutant matching neither is gone (its code changed) and is reported
as such, never dropped in silence. A replayed mutant keeps its recorded id.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.mutants.operators import OPERATOR_NAMES, OPERATORS, Edit, Operator, edits
from harness.mutants.sample import Mutant


class ReplayError(ValueError):
    """A recorded sample that cannot be read (no such file, not JSON, no mutants, an entry without its key)."""


@dataclass(frozen=True)
class Recorded:
    """One mutant as a report or a triage file recorded it."""

    id: str
    file: str  # package/path, / separators
    line: int
    col: int
    operator: str
    before: str
    after: str
    line_text: str | None  # the text of its first line before the mutation, when the record shows it (its diff)

    @property
    def key(self) -> str:
        """The recorded key: file:line:col:operator:after."""
        return f"{self.file}:{self.line}:{self.col}:{self.operator}:{self.after}"


@dataclass(frozen=True)
class Found:
    """A recorded mutant found in the current source: `mutant` carries the recorded id and today's position."""

    recorded: Recorded
    mutant: Mutant

    @property
    def moved(self) -> bool:
        """Found on another line than the recorded one."""
        return self.mutant.edit.line != self.recorded.line

    def to_json(self) -> dict:
        """The replay's entry."""
        return {"id": self.recorded.id, "recorded_key": self.recorded.key, "key": self.mutant.key}


@dataclass(frozen=True)
class Gone:
    """A recorded mutant that no longer applies, and why."""

    recorded: Recorded
    why: str

    def to_json(self) -> dict:
        """The replay's entry."""
        return {"id": self.recorded.id, "recorded_key": self.recorded.key, "why": self.why}


@dataclass
class Replay:
    """The recorded mutants matched against the current source, in the recorded order."""

    source: str  # the file the mutants were read from
    config: dict  # the recorded run's configuration ({} when the file has none)
    found: list[Found] = field(default_factory=list)
    gone: list[Gone] = field(default_factory=list)

    @property
    def mutants(self) -> list[Mutant]:
        """The mutants to run."""
        return [f.mutant for f in self.found]

    def recorded_key(self, mutant_id: str) -> str | None:
        """The recorded key of a found mutant, by its id."""
        return next((f.recorded.key for f in self.found if f.mutant.id == mutant_id), None)

    def to_json(self) -> dict:
        """What the replay found where, and what is gone."""
        return {
            "from": self.source,
            "recorded": len(self.found) + len(self.gone),
            "in_place": sum(not f.moved for f in self.found),
            "moved": [f.to_json() for f in self.found if f.moved],
            "gone": [g.to_json() for g in self.gone],
        }


# -- reading a record ---------------------------------------------------------------------------------------------

# Where each kind of file keeps its mutants and its configuration: a report of `nnfuzz evaluate --mutants` and a
# triage file (tests/mutants/survivors.json).
_LAYOUTS = (("mutants", "config"), ("survivors", "sample"))


def _line_text(diff: str) -> str | None:
    """The first removed line of a unified diff: the mutated line as it read before."""
    for line in diff.splitlines():
        if line.startswith("-") and not line.startswith("---"):
            return line[1:]
    return None


def _entry(raw: object, index: int) -> Recorded:
    """One recorded mutant from its JSON entry (its key is the authority on file, position, operator and after)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("key"), str) or not isinstance(raw.get("before"), str):
        raise ReplayError(f"mutant #{index + 1}: an entry needs a 'key' and a 'before' text, got {raw!r:.120}")
    parts = raw["key"].split(":", 4)
    if len(parts) != 5 or not parts[1].isdigit() or not parts[2].isdigit():
        raise ReplayError(f"mutant #{index + 1}: {raw['key']!r} is not a key file:line:col:operator:after")
    file, line, col, operator, after = parts
    diff = raw.get("diff")
    return Recorded(
        id=str(raw.get("id") or f"M{index + 1:03d}"),
        file=file,
        line=int(line),
        col=int(col),
        operator=operator,
        before=raw["before"],
        after=after,
        line_text=_line_text(diff) if isinstance(diff, str) else None,
    )


def read_recorded(path: Path) -> tuple[dict, list[Recorded]]:
    """The configuration and the mutants of a report or a triage file."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ReplayError(f"cannot read the recorded mutants {path}: {exc}") from None
    for entries, config in _LAYOUTS:
        if isinstance(data, dict) and isinstance(data.get(entries), list):
            recorded = [_entry(raw, i) for i, raw in enumerate(data[entries])]
            if not recorded:
                raise ReplayError(f"{path} records no mutants")
            return dict(data.get(config) or {}), recorded
    raise ReplayError(f"{path} is neither a mutants report (a 'mutants' list) nor a triage file (a 'survivors' list)")


# -- matching -----------------------------------------------------------------------------------------------------


def _lines(source: str) -> list[str]:
    """The lines of a source, split as the operators' positions count them."""
    return [line.decode() for line in source.encode().splitlines()]


def _candidates(rec: Recorded, edits_now: list[Edit], lines: list[str], taken: set[int]) -> list[Edit]:
    """The free current edits that make the recorded change at the recorded column of a line reading as recorded."""
    return [
        e
        for e in edits_now
        if (e.operator, e.col, e.before, e.after) == (rec.operator, rec.col, rec.before, rec.after)
        and e.start not in taken
        and (rec.line_text is None or lines[e.line - 1] == rec.line_text)
    ]


def _in_place(rec: Recorded, candidates: list[Edit]) -> Edit | None:
    """The candidate at the recorded line, if any."""
    return next((e for e in candidates if e.line == rec.line), None)


def _nearest(rec: Recorded, candidates: list[Edit]) -> Edit | str:
    """The candidate on the nearest line (the earlier of two as near), or why a moved mutant cannot be found."""
    if rec.line_text is None:
        return "not at its recorded place, and the record does not show its line's text to look for it elsewhere"
    if not candidates:
        return f"no line of the file reads {rec.line_text.strip()!r} with this mutation any more"
    return min(candidates, key=lambda e: (abs(e.line - rec.line), e.line))


# The two rounds of matching: mutants at their recorded place claim their edit first, so that a moved one never
# takes the place of another.
_ROUNDS = (_in_place, _nearest)


def replay(
    recorded: Sequence[Recorded],
    package: str,
    root: Path,
    source: str = "",
    config: dict | None = None,
    operators: Sequence[Operator] = OPERATORS,
) -> Replay:
    """The recorded mutants matched against the package folder `root` today, keeping their ids and order."""
    per_file: dict[str, tuple[list[Edit], list[str]] | str] = {}
    taken: dict[str, set[int]] = {}
    matched: dict[int, Edit | str] = {}
    for match in _ROUNDS:
        for i, rec in enumerate(recorded):
            if i in matched:
                continue
            known = _file_edits(rec, package, root, operators, per_file)
            if isinstance(known, str):
                matched[i] = known
                continue
            edit = match(rec, _candidates(rec, *known, taken.setdefault(rec.file, set())))
            if edit is not None:
                matched[i] = edit
                if isinstance(edit, Edit):
                    taken[rec.file].add(edit.start)
    result = Replay(source, dict(config or {}))
    for i, rec in enumerate(recorded):
        edit = matched[i]
        if isinstance(edit, Edit):
            result.found.append(Found(rec, Mutant(rec.id, package, rec.file.partition("/")[2], edit)))
        else:
            result.gone.append(Gone(rec, edit))
    return result


def _file_edits(
    rec: Recorded,
    package: str,
    root: Path,
    operators: Sequence[Operator],
    cache: dict[str, tuple[list[Edit], list[str]] | str],
) -> tuple[list[Edit], list[str]] | str:
    """The current edits and lines of a recorded mutant's file, or why there are none."""
    if rec.operator not in OPERATOR_NAMES:
        return f"no operator {rec.operator!r} any more"
    owner, _, path = rec.file.partition("/")
    if owner != package:
        return f"a mutant of {owner!r}, not of the package {package!r} of the driver evaluated"
    if rec.file not in cache:
        try:
            text = (root / path).read_text()
            cache[rec.file] = (edits(text, tuple(operators)), _lines(text))
        except OSError:
            cache[rec.file] = f"{rec.file} no longer exists"
        except SyntaxError as exc:
            cache[rec.file] = f"{rec.file} does not parse: {exc}"
    return cache[rec.file]


def replay_file(path: Path, package: str, root: Path, ids: Sequence[str] | None = None) -> Replay:
    """The mutants a report or triage file records (only `ids`, if given), matched against `root` today."""
    config, recorded = read_recorded(path)
    if ids is not None:
        known = {r.id for r in recorded}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise ReplayError(f"{path} records no mutant {', '.join(unknown)}")
        recorded = [r for r in recorded if r.id in set(ids)]
    return replay(recorded, package, root, str(path), config)
