"""Replaying recorded mutants on the current source: found in place, found again after an unrelated edit moved their
line, reported as gone when their code changed; recorded ids and order kept; bad records refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.mutants import SURVIVED, Mutant, MutantResult, ReplayError, edits, package_root, read_recorded, replay_file
from harness.mutants.operators import apply
from harness.mutants.replay import replay

PACKAGE, ROOT = package_root("driver_under_test:create_device")
OPERANDS = "validation/operands.py"


def _mutant(mutant_id: str, root: Path, path: str, line_text: str, operator: str, package: str = PACKAGE) -> Mutant:
    """The one mutant of `operator` on the line of `path` holding `line_text` (found by text, not line number)."""
    source = (root / path).read_text()
    [line] = [k + 1 for k, text in enumerate(source.splitlines()) if line_text in text]
    [edit] = [e for e in edits(source) if e.line == line and e.operator == operator]
    return Mutant(mutant_id, package, path, edit)


def _record(path: Path, root: Path, *mutants: Mutant, layout: str = "mutants") -> Path:
    """A report (or a triage file) recording the mutants as a run over `root` writes them."""
    rows = [MutantResult(m, SURVIVED, diff=m.diff(root)).to_json() for m in mutants]
    if layout == "survivors":  # a triage file's entries have no column of their own: only the key holds it
        rows = [{k: v for k, v in r.items() if k != "col"} for r in rows]
    path.write_text(json.dumps({layout: rows}))
    return path


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the driver package to edit."""
    return Path(shutil.copytree(ROOT, tmp_path / "src" / PACKAGE, ignore=shutil.ignore_patterns("__pycache__")))


def test_an_unchanged_source_finds_every_recorded_mutant_in_place(tmp_path: Path) -> None:
    m = _mutant("M005", ROOT, OPERANDS, "if s <= 0:", "compare_boundary")
    played = replay_file(_record(tmp_path / "r.json", ROOT, m), PACKAGE, ROOT)
    assert played.gone == [] and [f.mutant for f in played.found] == [m]
    assert not played.found[0].moved and played.to_json()["in_place"] == 1


@pytest.mark.parametrize("layout", ["mutants", "survivors"])
def test_a_mutant_is_found_again_after_an_unrelated_edit_shifts_its_line(copy: Path, tmp_path: Path, layout) -> None:
    m = _mutant("M042", ROOT, OPERANDS, "if s <= 0:", "compare_boundary")
    record = _record(tmp_path / "r.json", ROOT, m, layout=layout)
    original = (copy / OPERANDS).read_text()
    (copy / OPERANDS).write_text("# one\n# two\n# three\n" + original)
    played = replay_file(record, PACKAGE, copy)
    [found] = played.found
    assert played.gone == [] and found.moved
    assert found.mutant.id == "M042"
    assert (found.mutant.edit.line, found.mutant.edit.col) == (m.edit.line + 3, m.edit.col)
    # The same change, three lines lower.
    assert found.mutant.mutated_source(copy) == "# one\n# two\n# three\n" + apply(original, m.edit)
    assert played.to_json()["moved"] == [{"id": "M042", "recorded_key": m.key, "key": found.mutant.key}]


def test_a_mutant_whose_code_changed_is_reported_gone_not_dropped(copy: Path, tmp_path: Path) -> None:
    changed = _mutant("M001", ROOT, OPERANDS, "if s <= 0:", "compare_boundary")
    source = (copy / OPERANDS).read_text()
    assert source.count("if s <= 0:") == 1
    (copy / OPERANDS).write_text(source.replace("if s <= 0:", "if not s > 0:"))
    played = replay_file(_record(tmp_path / "r.json", ROOT, changed), PACKAGE, copy)
    assert played.found == []
    [gone] = played.gone
    assert gone.recorded.id == "M001" and gone.recorded.key == changed.key
    assert "if s <= 0:" in gone.why
    assert played.to_json()["gone"] == [{"id": "M001", "recorded_key": changed.key, "why": gone.why}]


def test_a_mutant_of_a_deleted_file_or_another_package_is_gone(copy: Path, tmp_path: Path) -> None:
    m = _mutant("M001", ROOT, OPERANDS, "if s <= 0:", "compare_boundary")
    other = Mutant("M002", "another_driver", OPERANDS, m.edit)
    record = _record(tmp_path / "r.json", ROOT, m)
    rows = json.loads(record.read_text())["mutants"]
    rows.append({**rows[0], "id": "M002", "key": other.key})
    record.write_text(json.dumps({"mutants": rows}))
    (copy / OPERANDS).unlink()
    played = replay_file(record, PACKAGE, copy)
    assert [(g.recorded.id, "no longer exists" in g.why, "another_driver" in g.why) for g in played.gone] == [
        ("M001", True, False),
        ("M002", False, True),
    ]


def test_the_replay_keeps_the_recorded_ids_and_order_and_can_take_a_few(tmp_path: Path) -> None:
    a = _mutant("M077", ROOT, OPERANDS, "if s <= 0:", "compare_boundary")
    b = Mutant("M003", PACKAGE, "pools.py", edits((ROOT / "pools.py").read_text())[0])
    record = _record(tmp_path / "r.json", ROOT, a, b)
    assert [m.id for m in replay_file(record, PACKAGE, ROOT).mutants] == ["M077", "M003"]
    assert [m.id for m in replay_file(record, PACKAGE, ROOT, ids=["M003"]).mutants] == ["M003"]
    with pytest.raises(ReplayError, match="M999"):
        replay_file(record, PACKAGE, ROOT, ids=["M999"])


def test_a_moved_mutant_goes_to_the_nearest_line_reading_as_recorded(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    root.mkdir()
    lines = ["def f(a):", "    return a < 1", "", "", "def g(a):", "    return a < 1", ""]
    (root / "mod.py").write_text("\n".join(lines))
    [e_f, e_g] = [e for e in edits((root / "mod.py").read_text()) if e.operator == "compare_boundary"]
    assert (e_f.line, e_g.line) == (2, 6)
    mutants = (Mutant("M1", "pkg", "mod.py", e_f), Mutant("M2", "pkg", "mod.py", e_g))
    _, recorded = read_recorded(_record(tmp_path / "r.json", root, *mutants))
    # Two lines inserted at the top: f's line is now 4, g's 8; each mutant goes to the identical line nearest its own.
    (root / "mod.py").write_text("\n".join(["x = 1", "y = 2", *lines]))
    played = replay(recorded, "pkg", root)
    assert [(f.mutant.id, f.mutant.edit.line, f.moved) for f in played.found] == [("M1", 4, True), ("M2", 8, True)]
    # Four lines inserted between them: f stays at 2 and claims it; g's mutant finds line 10, though farther away.
    (root / "mod.py").write_text("\n".join([*lines[:3], "a = 1", "b = 2", "c = 3", "d = 4", *lines[3:]]))
    played = replay(recorded, "pkg", root)
    assert [(f.mutant.id, f.mutant.edit.line, f.moved) for f in played.found] == [("M1", 2, False), ("M2", 10, True)]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "cannot read"),
        (json.dumps({"other": []}), "neither a mutants report"),
        (json.dumps({"mutants": []}), "records no mutants"),
        (json.dumps({"mutants": [{"id": "M1"}]}), "needs a 'key'"),
        (json.dumps({"survivors": [{"key": "a/b.py:x:1:add_sub:+", "before": "-"}]}), "is not a key"),
    ],
)
def test_a_bad_record_is_refused_with_a_clear_message(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(content)
    with pytest.raises(ReplayError, match=message):
        replay_file(path, PACKAGE, ROOT)


def test_the_committed_triage_file_replays_on_the_current_source() -> None:
    # A survivor gone means its code changed under it: replay it, then triage it again or drop it.
    played = replay_file(Path(__file__).parent / "survivors.json", PACKAGE, ROOT)
    assert played.found and [g.recorded.key for g in played.gone] == []
