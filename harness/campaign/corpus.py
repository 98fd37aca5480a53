"""Corpus folders: their entries, entries a kill cut short, and merging one folder into another.

libFuzzer names every corpus entry by the SHA-1 of its bytes, so an entry whose name and bytes disagree was cut
short by a kill while being written; such entries are dropped when a run resumes. Merging uses libFuzzer's own
`-merge=1`: only entries that add coverage features to the destination are copied into it (minimized, no
duplicates: the file name is the content hash), and a merge killed half-way resumes from its control file
(`nnfuzz corpus --minimize`, harness.campaign.corpora).
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.campaign.workers import launched
from harness.runner.libfuzzer import fuzz_environment

_SHA1_NAME = re.compile(r"^[0-9a-f]{40}$")


def entries(folder: Path) -> list[str]:
    """The names of a corpus folder's entries (sorted; none when the folder is missing)."""
    try:
        return sorted(e.name for e in os.scandir(folder) if e.is_file() and not e.name.startswith("."))
    except FileNotFoundError:
        return []


def is_whole(path: Path) -> bool:
    """False for an entry named by a SHA-1 that its bytes do not have (a write cut short)."""
    if not _SHA1_NAME.match(path.name):
        return True
    try:
        return hashlib.sha1(path.read_bytes()).hexdigest() == path.name
    except FileNotFoundError:
        return False


def drop_partial(folder: Path) -> list[str]:
    """Delete the entries a kill cut short; their names."""
    dropped = []
    for name in entries(folder):
        path = folder / name
        if not is_whole(path):
            path.unlink(missing_ok=True)
            dropped.append(name)
    return dropped


@dataclass
class MergeResult:
    """What a merge added."""

    added: int
    total: int
    ok: bool
    detail: str = ""


def merge_corpus(
    script: Path,
    destination: Path,
    sources: Sequence[Path],
    work_dir: Path,
    driver: str,
    faults: Sequence[str],
    timeout_s: int,
    limit_s: float,
) -> MergeResult:
    """libFuzzer -merge=1 of `sources` into `destination` through the target's script, within `limit_s`."""
    destination.mkdir(parents=True, exist_ok=True)
    work_dir.mkdir(parents=True, exist_ok=True)
    sources = [s for s in sources if s.is_dir() and entries(s)]
    before = set(entries(destination))
    if not sources:
        return MergeResult(0, len(before), True)
    control = work_dir / "merge_control"
    command = [
        sys.executable,
        str(script),
        "-merge=1",
        f"-merge_control_file={control}",
        f"-timeout={timeout_s}",
        str(destination),
        *map(str, sources),
    ]
    log_path = work_dir / "merge.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            launched(command),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=fuzz_environment(driver, faults),
            cwd=work_dir,
            start_new_session=True,  # the merge re-executes the script: its children are stopped with it
        )
        try:
            code = process.wait(timeout=limit_s)
            detail = "" if code == 0 else f"the merge exited with code {code} (see {log_path})"
        except subprocess.TimeoutExpired:
            code, detail = None, f"the merge took longer than {limit_s:g} s and was stopped; it resumes next time"
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
    after = set(entries(destination))
    if code == 0:
        control.unlink(missing_ok=True)
    return MergeResult(len(after - before), len(after), code == 0, detail)
