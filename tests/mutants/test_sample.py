"""The sample of mutants: drawn with a seed, reproducible, within the files asked for, written into copies only."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from harness.mutants.sample import SampleError, package_files, package_root, sample

PACKAGE, ROOT = package_root("driver_under_test:create_device")


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


def test_the_driver_package_is_found_from_the_spec() -> None:
    assert PACKAGE == "driver_under_test" and (ROOT / "__init__.py").is_file()


def test_the_same_seed_draws_the_same_sample_and_another_seed_another() -> None:
    first = [m.key for m in sample(PACKAGE, ROOT, 20, seed=7)]
    assert first == [m.key for m in sample(PACKAGE, ROOT, 20, seed=7)]
    assert first != [m.key for m in sample(PACKAGE, ROOT, 20, seed=8)]
    assert len(set(first)) == 20
    assert [m.id for m in sample(PACKAGE, ROOT, 3, seed=7)] == ["M001", "M002", "M003"]


def test_excluded_files_are_never_drawn() -> None:
    files = package_files(ROOT)
    assert "faults.py" not in files and not any(f.startswith("backends/litert/") for f in files)
    assert "validation/operands.py" in files
    drawn = {m.path for m in sample(PACKAGE, ROOT, 200, seed=1, exclude=("validation/*",))}
    assert drawn and not any(p.startswith("validation/") for p in drawn)


@pytest.mark.parametrize("count", [0, -3])
def test_a_sample_of_no_mutants_is_refused(count: int) -> None:
    with pytest.raises(SampleError, match="positive"):
        sample(PACKAGE, ROOT, count, seed=1)


def test_a_sample_larger_than_the_population_is_refused() -> None:
    with pytest.raises(SampleError, match="only"):
        sample(PACKAGE, ROOT, 10**7, seed=1)


def test_every_drawn_mutant_compiles_and_differs_from_the_original() -> None:
    for m in sample(PACKAGE, ROOT, 300, seed=3):
        mutated = m.mutated_source(ROOT)
        assert mutated != (ROOT / m.path).read_text()
        compile(mutated, m.path, "exec")


def test_a_copy_carries_the_mutation_and_the_original_tree_stays_as_it_was(tmp_path: Path) -> None:
    before = _tree_digest(ROOT)
    [mutant] = sample(PACKAGE, ROOT, 1, seed=5)
    copy = mutant.write_copy(ROOT, tmp_path)
    assert copy == tmp_path / PACKAGE
    assert (copy / mutant.path).read_text() == mutant.mutated_source(ROOT)
    assert _tree_digest(copy) != before
    assert _tree_digest(ROOT) == before
    diff = mutant.diff(ROOT)
    assert diff.startswith(f"--- a/{PACKAGE}/{mutant.path}\n+++ b/{PACKAGE}/{mutant.path}\n")
    removed = [line for line in diff.splitlines()[2:] if line.startswith("-")]
    added = [line for line in diff.splitlines()[2:] if line.startswith("+")]
    assert len(removed) == 1 and mutant.edit.before.splitlines()[0] in removed[0]
    assert len(added) == 1 and mutant.edit.after in added[0]


def test_the_committed_triage_file_gives_each_survivor_a_known_reason_and_a_note() -> None:
    import json

    from harness.cli.mutants_command import GAP_CLASSES, REASONS

    data = json.loads((Path(__file__).parent / "survivors.json").read_text())
    assert data["command"].startswith("nnfuzz evaluate --mutants ") and data["survivors"]
    for entry in data["survivors"]:
        assert entry["reason"] in REASONS, entry["key"]
        assert entry["reason"] == "open" or entry["note"], entry["key"]
        # An open survivor names the gap of the harness it shows.
        assert entry["reason"] != "open" or entry.get("gap_class") in GAP_CLASSES, entry["key"]
    counted = {r: sum(e["reason"] == r for e in data["survivors"]) for r in REASONS}
    assert data["summary"]["by_reason"] == {r: n for r, n in sorted(counted.items()) if n}
    # That each still names a mutant of the current source is tests/mutants/test_replay.py's to check.
