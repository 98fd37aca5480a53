"""Seeds and working corpora: sizes and coverage, minimization with libFuzzer -merge=1 that keeps only what adds
to the seeds, promotion of a small set that keeps the coverage of seeds and working corpus, and the `nnfuzz corpus`
command's misuse."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from harness.campaign.config import TargetSpec
from harness.campaign.corpora import minimize, promote, restore_interrupted, survey
from harness.campaign.corpus import entries
from harness.campaign.coverage_replay import _cover
from harness.cli.corpus_command import main_corpus

ROOT = Path(__file__).resolve().parents[2]
VALIDATION = TargetSpec.named("validation")
DRIVER = "driver_under_test:create_device"


def _split_seeds(tmp_path: Path, kept: int) -> tuple[Path, Path]:
    """A seed root with the first `kept` committed validation seeds and a working root with the others."""
    committed = ROOT / "corpus" / "validation"
    names = entries(committed)
    seeds, work = tmp_path / "corpus" / "validation", tmp_path / "work" / "validation"
    seeds.mkdir(parents=True)
    work.mkdir(parents=True)
    for i, name in enumerate(names):
        shutil.copyfile(committed / name, (seeds if i < kept else work) / name)
    return seeds.parent, work.parent


def test_survey_minimize_and_promote_keep_the_seeds_and_the_coverage(tmp_path: Path) -> None:
    seeds, work = _split_seeds(tmp_path, 4)
    before = survey([VALIDATION], seeds, work, DRIVER)
    [row] = before.targets
    assert (row.seeds, row.working) == (4, 28) and row.seed_bytes > 0 and row.working_bytes > 0
    assert 0 < row.seed_branches < row.branches <= before.branches_total
    assert before.seed_branches < before.branches  # all targets, with what importing the driver reaches

    # Minimizing keeps the working entries that add coverage features to the seeds; the seeds are not touched.
    result = minimize(VALIDATION, seeds, work, DRIVER)
    assert result.ok and result.before == 28 and 0 < result.after <= 28, result
    assert len(entries(seeds / "validation")) == 4
    assert not [p.name for p in work.iterdir() if p.name.startswith(".")]  # no scratch folder left
    after = survey([VALIDATION], seeds, work, DRIVER)
    assert after.targets[0].working == result.after

    # Promoting copies into the seeds a few entries that keep the coverage of seeds and working corpus together.
    [promoted] = promote([VALIDATION], seeds, work, DRIVER)
    assert promoted.ok and 0 < len(promoted.entries) <= result.after
    assert promoted.seed_branches_before == after.targets[0].seed_branches
    assert promoted.seed_branches_after == after.targets[0].branches
    for name in promoted.entries:
        assert hashlib.sha1((seeds / "validation" / name).read_bytes()).hexdigest() == name
    grown = survey([VALIDATION], seeds, work, DRIVER, coverage=False)
    assert grown.targets[0].seeds == 4 + len(set(promoted.entries))


def test_the_set_cover_keeps_every_branch_and_line_with_the_fewest_entries() -> None:
    f = "/driver/a.py"
    branches = {f: {(1, 2), (1, 3), (4, 5), (4, 6)}}
    statements = {f: {1, 2, 3, 4, 5, 6}}
    per_input = {
        0: {f: {(1, 2)}},  # the seed
        1: {f: {(1, 3)}},
        2: {f: {(1, 3), (4, 5)}},
        3: {f: {(4, 6)}},
        4: {f: {(1, 2)}},  # adds nothing to the seed
    }
    assert _cover(per_input, [0], branches, statements) == [2, 3]


def test_a_minimization_killed_between_its_renames_is_put_back(tmp_path: Path) -> None:
    _, work = _split_seeds(tmp_path, 30)
    folder = work / "validation"
    folder.rename(work / ".validation.old")
    restore_interrupted(folder)
    assert len(entries(folder)) == 2


def test_the_corpus_command_prints_sizes_writes_json_and_refuses_misuse(tmp_path: Path, capsys) -> None:
    seeds = tmp_path / "corpus"
    (seeds / "validation").mkdir(parents=True)
    (seeds / "validation" / "a").write_bytes(b"\x01\x02")
    work = tmp_path / "work"
    args = ["--targets", "validation", "--corpus", str(seeds), "--work-corpus", str(work), "--no-coverage"]
    assert main_corpus([*args, "--json", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[:4] == ["validation", "1", "0", "0"]
    document = json.loads((tmp_path / "c.json").read_text())
    assert document["survey"]["targets"][0]["seeds"] == 1 and document["work_corpus"] == str(work)
    assert main_corpus(["--targets", "no_such_target", "--no-coverage"]) == 2
    assert "no fuzz script for target(s) no_such_target" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert main_corpus(["--targets", "validation", "--work-corpus", str(tmp_path / "file"), "--no-coverage"]) == 2
    assert "is not a folder" in capsys.readouterr().err
