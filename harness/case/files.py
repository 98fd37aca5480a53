"""Case files: plain, readable JSON (sorted keys, one-space indent)."""

from __future__ import annotations

import json
import os
from pathlib import Path


def dump_case(obj: object, path: str | os.PathLike) -> None:
    """Write a case (any JSON-serializable object) to `path`."""
    text = json.dumps(obj, sort_keys=True, indent=1)
    Path(path).write_text(text + "\n", encoding="utf-8")


def load_case(path: str | os.PathLike) -> object:
    """Read a case written by dump_case."""
    return json.loads(Path(path).read_text(encoding="utf-8"))
