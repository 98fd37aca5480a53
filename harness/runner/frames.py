"""Stack frames out of traceback text, as the stable `file:function` keys a verdict's signature is built from.

Two texts are read: Python tracebacks (`File "p", line N, in f`, most recent call last) and faulthandler dumps
(`File "p", line N in f`, most recent call first). Paths are made relative to the import root they were loaded
from, so the same bug gives the same key on every machine.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path, PurePath

_PY_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line \d+, in (?P<func>\S+)')
_DUMP_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line \d+ in (?P<func>\S+)')
_DUMP_THREAD = re.compile(r"^(?P<current>Current thread|Thread) 0x[0-9a-f]+")

# Frames of these never say where a bug is: the harness's own plumbing and the standard library's machinery.
_PLUMBING_PREFIXES = ("harness/runner/", "multiprocessing/", "threading.py", "importlib/", "concurrent/", "<")
MAX_FRAMES = 8


# The folder holding the harness package: drivers installed from the same checkout are found relative to it.
_CHECKOUT = str(Path(__file__).resolve().parents[2])


def _import_roots() -> list[str]:
    """sys.path entries (the working directory for ""), and the checkout, longest first: the most specific wins."""
    roots = {os.path.abspath(p or os.curdir) for p in sys.path} | {_CHECKOUT}
    return sorted((r.rstrip("/") for r in roots if r != "/"), key=len, reverse=True)


def relative_path(path: str, roots: Iterable[str] | None = None) -> str:
    """`path` relative to the import root it lives under (unchanged when under none)."""
    for root in _import_roots() if roots is None else roots:
        if path.startswith(root + "/"):
            return path[len(root) + 1 :]
    # Standard-library files live under lib/pythonX.Y even when that folder is not on sys.path here.
    parts = PurePath(path).parts
    for i, part in enumerate(parts):
        if part.startswith("python3") and i + 1 < len(parts):
            return "/".join(parts[i + 1 :])
    return path


def _key(path: str, func: str) -> str:
    return f"{relative_path(path)}:{func}"


def python_frames(traceback_text: str) -> list[str]:
    """`file:function` of a Python traceback's frames, innermost first."""
    frames = [_key(m["file"], m["func"]) for line in traceback_text.splitlines() if (m := _PY_FRAME.match(line))]
    return frames[::-1]


def dump_frames(dump_text: str) -> list[str]:
    """`file:function` of a faulthandler dump's frames, innermost first, from the thread that was interrupted.

    When several threads were dumped the current one (the thread that received the signal) is taken; a dump of
    one thread has no header naming it and is taken whole.
    """
    threads: list[tuple[bool, list[str]]] = []
    for line in dump_text.splitlines():
        if m := _DUMP_THREAD.match(line.strip()):
            threads.append((m["current"] == "Current thread", []))
        elif m := _DUMP_FRAME.match(line):
            if not threads:
                threads.append((True, []))
            threads[-1][1].append(_key(m["file"], m["func"]))
    if not threads:
        return []
    current = [frames for is_current, frames in threads if is_current]
    # Prefer the interrupted thread; if it only shows plumbing (it was waiting), the busiest other thread.
    for frames in [*current, *sorted((f for _, f in threads), key=len, reverse=True)]:
        if significant(frames):
            return frames
    return current[0] if current else threads[0][1]


def significant(frames: Iterable[str]) -> list[str]:
    """The frames that can locate a bug: no runner plumbing, no standard-library machinery, capped."""
    kept = [f for f in frames if not f.startswith(_PLUMBING_PREFIXES) and not _is_stdlib(f)]
    return kept[:MAX_FRAMES]


def _is_stdlib(frame: str) -> bool:
    top = frame.split("/", 1)[0].split(":", 1)[0].removesuffix(".py")
    return top in sys.stdlib_module_names
