"""A finding: one bug, named by its verdict's signature, with the smallest input known to reproduce it.

This one record goes from the triage to a finding folder (finding.json), the findings database, the campaign's
events and its report. Its JSON (`to_json`) is what finding.json and the database hold; a finding folder keeps the
input, the case and the traceback as files of their own next to finding.json, so finding.json leaves them out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from harness.drivers import DEFAULT_DRIVER
from harness.oracle.verdict import Verdict
from harness.runner.replay import repro_command, shown_path

# finding.json's format. Version 1 (before findings were one record) had no "version" key and a "first" key
# (new or known to the run that stored it, now in triage.jsonl only); version 2 had no classification. Both are read
# as they are.
FINDING_VERSION = 3
FINDING_FILE, CASE_FILE, INPUT_FILE = "finding.json", "case.json", "input.bin"
ORIGINAL_FILE, TRACEBACK_FILE = "original.bin", "traceback.txt"
FOLDER_FILES = (CASE_FILE, INPUT_FILE, ORIGINAL_FILE, TRACEBACK_FILE, FINDING_FILE)
# An engine finding's standalone reproducer for the engine's owners (harness.engines.export_case), in its folder.
EXPORT_FOLDER = "export"
NO_TRACEBACK = "(no traceback: the verdict comes from the oracle)\n"
# What reproduces the bug rather than describes it: the files of a folder, left out of finding.json.
_CONTENT = ("input", "case", "traceback")


class FindingFormatError(ValueError):
    """A finding written by a newer nnfuzz, in a format this one does not know (use that version)."""


@dataclass
class Finding:
    """One bug as triage names it: its verdict, the smallest input known to reproduce it, and where it is stored."""

    signature: str
    target: str  # the registered name (folders, reports)
    target_ref: str  # what the runner resolves: a registered name or module:attribute
    outcome: str
    rule: str | None
    title: str
    details: str = ""
    frames: list[str] = field(default_factory=list)
    driver: str = DEFAULT_DRIVER
    faults: list[str] = field(default_factory=list)
    minimized: str = "none"  # how the input was made smaller: structural | libfuzzer | none
    input: bytes | None = None  # the (minimized) raw fuzzer input, when there is one
    case: dict | None = None  # the (minimized) case JSON, when the input decodes to one
    traceback: str = ""
    sizes: dict[str, int | None] = field(default_factory=dict)  # bytes of the artifact ("original") and the input
    run: str = ""  # the run that stored it
    artifact: str = ""  # the libFuzzer file it was triaged from
    folder: str = ""  # its finding folder, as a command line shows it
    repro: str = ""  # the `nnfuzz repro` command of its primary file
    repros: dict[str, str] = field(default_factory=dict)  # each stored input file's `nnfuzz repro` command
    stored: str = ""  # when its folder was written (ISO 8601 UTC)
    # On a driver over a third-party engine: the differential re-runs' verdict (harness.campaign.classify), and the
    # signature of the verdict it was triaged under (its own signature is then the classification's).
    classification: dict | None = None
    verdict_signature: str = ""

    @property
    def replay_signature(self) -> str:
        """The verdict signature a replay of its input must give for it to reproduce."""
        return self.verdict_signature or self.signature

    @property
    def cls(self) -> str:
        """Its class on an engine (engine, translation, plumbing, divergence, unclassified); "" when unclassified
        because it is the driver's own."""
        return str(self.classification["class"]) if self.classification else ""

    @classmethod
    def named(cls, verdict: Verdict, target: str, target_ref: str, driver: str, faults: Sequence[str]) -> Finding:
        """The finding a failing verdict names, before anything reproduces it."""
        return cls(
            signature=verdict.signature,
            target=target,
            target_ref=target_ref,
            outcome=verdict.outcome.value,
            rule=verdict.rule,
            title=verdict.title,
            details=verdict.details,
            frames=list(verdict.frames),
            driver=driver,
            faults=list(faults),
        )

    @property
    def primary(self) -> str:
        """The stored file that reproduces it best: the reduced case, else the (minimized) bytes, else the case."""
        if self.minimized == "structural" and self.case is not None:
            return CASE_FILE
        if self.input is not None:
            return INPUT_FILE
        return CASE_FILE if self.case is not None else ORIGINAL_FILE

    @property
    def payload(self) -> bytes | dict | None:
        """What replays it: the primary file's content (None when it has no input or case)."""
        return {CASE_FILE: self.case, INPUT_FILE: self.input}.get(self.primary)

    def placed(self, folder: Path, run: str) -> Finding:
        """This finding as stored in `folder` by `run`, with the `nnfuzz repro` commands of its files."""
        present = [name for name, value in ((CASE_FILE, self.case), (INPUT_FILE, self.input)) if value is not None]
        repros = {name: self._repro(folder / name) for name in present}
        repro = repros.get(self.primary) or self._repro(folder / self.primary)
        return replace(self, folder=shown_path(folder), run=run, repro=repro, repros=repros)

    def _repro(self, path: Path) -> str:
        return repro_command(path, self.target_ref, self.driver, self.faults)

    def to_json(self, content: bool = True) -> dict:
        """A JSON-ready dict; with content, also the input (as hex), the case and the traceback."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _CONTENT}
        if content:
            d["input_hex"] = self.input.hex() if self.input is not None else None
            d["case"] = self.case
            d["traceback"] = self.traceback
        return d

    @classmethod
    def from_json(cls, d: Mapping) -> Finding:
        """The finding a to_json dict (or a finding.json) describes; FindingFormatError if it is of a newer format."""
        version = d.get("version", 1)
        if version > FINDING_VERSION:
            raise FindingFormatError(
                f"finding {d.get('signature')} is of format {version}; this nnfuzz reads up to {FINDING_VERSION}"
            )
        names = {f.name for f in fields(cls)} - set(_CONTENT)
        values = {k: v for k, v in d.items() if k in names}
        hexed = d.get("input_hex")
        content = {"input": bytes.fromhex(hexed) if hexed is not None else None, "case": d.get("case")}
        return cls(**values, **content, traceback=d.get("traceback") or "")


def folder_files(finding: Finding, original: bytes) -> dict[str, bytes]:
    """The files of a finding's folder: the artifact as found, the input, the case, the traceback, finding.json."""
    files: dict[str, bytes] = {ORIGINAL_FILE: original}
    if finding.input is not None:
        files[INPUT_FILE] = finding.input
    if finding.case is not None:
        files[CASE_FILE] = (json.dumps(finding.case, indent=1, sort_keys=True) + "\n").encode()
    files[TRACEBACK_FILE] = (finding.traceback or NO_TRACEBACK).encode()
    info = {"version": FINDING_VERSION, **finding.to_json(content=False)}
    files[FINDING_FILE] = (json.dumps(info, indent=1, sort_keys=True) + "\n").encode()
    return files


def read_folder(folder: Path, content: bool = False) -> Finding:
    """The finding a folder holds; with content, its input, case and traceback read from their files."""
    finding = Finding.from_json(json.loads((folder / FINDING_FILE).read_text()))
    if not content:
        return finding
    input_path, case_path, traceback_path = folder / INPUT_FILE, folder / CASE_FILE, folder / TRACEBACK_FILE
    traceback = traceback_path.read_text() if traceback_path.is_file() else ""
    return replace(
        finding,
        input=input_path.read_bytes() if input_path.is_file() else None,
        case=json.loads(case_path.read_text()) if case_path.is_file() else None,
        traceback="" if traceback == NO_TRACEBACK else traceback,
    )


def stored_findings(root: Path, content: bool = False) -> dict[str, Finding]:
    """The findings stored under a findings/ folder, by signature (folders without finding.json are skipped)."""
    if not root.is_dir():
        return {}
    return {f.name: read_folder(f, content) for f in sorted(root.iterdir()) if (f / FINDING_FILE).is_file()}
