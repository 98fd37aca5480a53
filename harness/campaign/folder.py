"""A campaign's run folder: where each file lives, and writes that survive SIGKILL.

Everything a campaign reports is written atomically (a temporary file, fsync, rename) or appended to a journal
line by line (each line flushed and synced). A campaign killed at any point leaves complete files and complete
journal lines only; resuming reads them back.

Layout:
    campaign.json              the settings (written once)
    state.json                 progress, checkpointed every few seconds
    timeline.jsonl             per-target figures over time
    corpus_times.jsonl         when each working-corpus entry appeared (campaign seconds; 0 and "carried" for
                               those earlier campaigns left)
    triage.jsonl               every libFuzzer artifact triaged, with its outcome
    targets/<name>/corpus/     the working corpus, when the campaign keeps its own (--fresh-corpus, --faults)
    targets/<name>/findings/   libFuzzer's crash-/timeout-/oom- files
    targets/<name>/logs/       one log per libFuzzer process
    findings/<signature>/      a finding: input.bin, case.json, traceback.txt, finding.json
    coverage/                  coverage.py data of the corpus replay, its figures (summary.json) and the
                               line-by-line HTML (html/index.html)
    report.json, report.html
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a file so that it is either absent, the old version or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _sync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    """atomic_write_bytes for text (UTF-8)."""
    atomic_write_bytes(path, text.encode())


def atomic_write_json(path: Path, obj: object) -> None:
    """Readable JSON, written atomically."""
    atomic_write_text(path, json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n")


def publish_folder(files: dict[str, bytes], destination: Path) -> bool:
    """Create `destination` holding `files` all at once (a filled temporary folder renamed into place).

    False when the destination already exists (someone published it first; it is left as it is).
    """
    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.exists():
        return False
    tmp = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".tmp", dir=destination.parent))
    try:
        for name, data in files.items():
            with open(tmp / name, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        _sync_dir(tmp)
        os.rename(tmp, destination)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if destination.exists():
            return False
        raise
    _sync_dir(destination.parent)
    return True


def remove_leftovers(folder: Path) -> list[Path]:
    """Delete the temporary files and folders an interrupted atomic write left in `folder`."""
    removed = []
    if folder.is_dir():
        for p in folder.iterdir():
            if p.name.startswith(".") and p.name.endswith(".tmp"):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
                removed.append(p)
    return removed


def _sync_dir(folder: Path) -> None:
    # The rename is durable only once the folder's entry is on disk.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class Journal:
    """An append-only JSON-lines file: each record is on disk once `append` returns."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: dict) -> None:
        """Add one record."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, sort_keys=True, default=str) + "\n"
        with open(self.path, "a") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def extend(self, records: list[dict]) -> None:
        """Add several records with one sync."""
        if not records:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in records)
        with open(self.path, "a") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())

    def __iter__(self) -> Iterator[dict]:
        """The records, oldest first; a last line cut short by a kill is skipped."""
        if not self.path.is_file():
            return
        with open(self.path) as f:
            for line in f:
                if not line.endswith("\n"):
                    return  # the write was interrupted: the record never counted
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue


@dataclass(frozen=True)
class RunFolder:
    """The paths of one campaign's run folder."""

    root: Path

    @property
    def name(self) -> str:
        """The run's id (its folder name)."""
        return self.root.name

    @property
    def settings(self) -> Path:
        """campaign.json: the settings."""
        return self.root / "campaign.json"

    @property
    def state(self) -> Path:
        """state.json: progress, checkpointed."""
        return self.root / "state.json"

    @property
    def timeline(self) -> Journal:
        """timeline.jsonl: per-target figures over time."""
        return Journal(self.root / "timeline.jsonl")

    @property
    def corpus_times(self) -> Journal:
        """corpus_times.jsonl: when each working-corpus entry appeared."""
        return Journal(self.root / "corpus_times.jsonl")

    @property
    def triage_journal(self) -> Journal:
        """triage.jsonl: every artifact triaged."""
        return Journal(self.root / "triage.jsonl")

    def target_dir(self, target: str) -> Path:
        """targets/<name>/: what libFuzzer's FuzzConfig calls its out_dir."""
        return self.root / "targets" / target

    def corpus(self, target: str) -> Path:
        """targets/<name>/corpus/: the working corpus of a campaign that keeps its own."""
        return self.target_dir(target) / "corpus"

    def artifacts(self, target: str) -> Path:
        """targets/<name>/findings/: libFuzzer's crash, timeout and oom files."""
        return self.target_dir(target) / "findings"

    def logs(self, target: str) -> Path:
        """targets/<name>/logs/: one log per libFuzzer process."""
        return self.target_dir(target) / "logs"

    @property
    def findings(self) -> Path:
        """findings/: one folder per signature."""
        return self.root / "findings"

    def finding(self, signature: str) -> Path:
        """findings/<signature>/."""
        return self.findings / signature

    @property
    def coverage(self) -> Path:
        """coverage/: the corpus replay under coverage.py."""
        return self.root / "coverage"

    @property
    def report_json(self) -> Path:
        """report.json."""
        return self.root / "report.json"

    @property
    def report_html(self) -> Path:
        """report.html."""
        return self.root / "report.html"

    def exists(self) -> bool:
        """True when the folder holds a campaign."""
        return self.settings.is_file()

    def read_json(self, path: Path, default: object = None) -> object:
        """A JSON file of the folder (default when missing)."""
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            return default
