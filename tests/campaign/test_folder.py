"""The run folder's writes: whole files or none, journals that skip a line a kill cut short."""

from __future__ import annotations

import json
from pathlib import Path

from harness.campaign.folder import Journal, atomic_write_json, publish_folder, remove_leftovers


def test_an_atomic_write_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "state.json"
    atomic_write_json(path, {"a": 1})
    atomic_write_json(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in path.parent.iterdir()] == ["state.json"]


def test_a_journal_reads_back_whole_records_and_skips_a_last_line_cut_short(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    journal.append({"n": 1})
    journal.extend([{"n": 2}, {"n": 3}])
    with open(journal.path, "a") as f:
        f.write('{"n": 4')  # a write interrupted by a kill: no newline
    assert [r["n"] for r in journal] == [1, 2, 3]


def test_a_folder_is_published_whole_once_and_never_overwritten(tmp_path: Path) -> None:
    destination = tmp_path / "findings" / "abc"
    assert publish_folder({"a.txt": b"first", "b.bin": b"\x00\x01"}, destination)
    assert not publish_folder({"a.txt": b"second"}, destination)
    assert (destination / "a.txt").read_bytes() == b"first"
    assert sorted(p.name for p in destination.iterdir()) == ["a.txt", "b.bin"]
    assert [p.name for p in destination.parent.iterdir()] == ["abc"]


def test_leftovers_of_interrupted_writes_are_removed(tmp_path: Path) -> None:
    (tmp_path / ".abc.x1.tmp").mkdir()
    (tmp_path / ".state.json.y2.tmp").write_text("half")
    (tmp_path / "kept").write_text("whole")
    assert len(remove_leftovers(tmp_path)) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["kept"]
