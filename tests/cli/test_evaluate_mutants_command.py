"""`nnfuzz evaluate --mutants N`: bad input is misuse; a small sample gives the table, the JSON report and the
survivors' triage file, and the exit code says whether a survivor is left untriaged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.evaluate_command import main_evaluate

ENTRY_KEYS = {"id", "key", "file", "line", "col", "operator", "before", "after", "status", "killed", "seconds"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mutants", "0"], "--mutants must be a positive"),
        (["--mutants", "-2"], "--mutants must be a positive"),
        (["--mutants", "2", "--jobs", "0"], "--jobs must be positive"),
        (["--mutants", "2", "--budget-seconds", "0"], "--budget-seconds must be positive"),
        (["--mutants", "2", "--faults", "x"], "does not go with --faults"),
        (["--mutants", "2", "--update-survivors"], "needs --survivors"),
        (["--mutants", "2", "--exclude", "*"], "no mutation applies"),
        (["--mutants", "2", "--driver", "no_such_package:f"], "not an importable package"),
        (["--mutants", "2", "--mutants-from", "r.json"], "do not go together"),
        (["--mutants", "2", "--ids", "M001"], "--ids needs --mutants-from"),
        (["--mutants-from", "no/such/report.json"], "cannot read the recorded mutants"),
        (["--mutants-from", "r.json", "--seed", "3"], "replays the recorded one"),
        (["--mutants-from", "r.json", "--faults", "x"], "--mutants-from does not go with --faults"),
    ],
)
def test_bad_input_is_misuse_with_a_clear_message(argv: list[str], message: str, capsys) -> None:
    assert main_evaluate(argv) == 2
    assert message in capsys.readouterr().err


def test_a_small_sample_reports_a_table_json_and_its_survivors(tmp_path: Path, capsys) -> None:
    out, triage = tmp_path / "mutants.json", tmp_path / "survivors.json"
    argv = ["--mutants", "3", "--seed", "11", "--budget-seconds", "1", "--jobs", "2", "--targets", "validation"]
    code = main_evaluate([*argv, "--json", str(out), "--survivors", str(triage), "--update-survivors"])
    report = json.loads(out.read_text())
    assert set(report) == {"config", "summary", "mutants"}
    assert report["config"]["seed"] == 11 and report["config"]["fingerprint"]
    rows = report["mutants"]
    assert [r["id"] for r in rows] == ["M001", "M002", "M003"] and all(ENTRY_KEYS <= set(r) for r in rows)
    s = report["summary"]
    assert s["killed"] + s["killed_at_start"] + s["survived"] + s["errors"] == s["mutants"] == 3
    printed = capsys.readouterr().out
    assert "mutation score" in printed and all(r["id"] in printed for r in rows)
    survivors = [r for r in rows if r["status"] == "survived"]
    data = json.loads(triage.read_text())
    assert [e["key"] for e in data["survivors"]] == [r["key"] for r in survivors]
    assert all(e["reason"] == "open" and e["diff"].startswith("--- a/") for e in data["survivors"])
    assert data["command"].startswith("nnfuzz evaluate --mutants 3 --seed 11 --budget-seconds 1 --jobs 2")
    assert code == (1 if survivors or s["errors"] else 0)
    for r in survivors:
        assert r["diff"] in printed


def test_a_triage_file_with_an_unknown_reason_is_misuse(tmp_path: Path, capsys) -> None:
    triage = tmp_path / "survivors.json"
    triage.write_text(json.dumps({"survivors": [{"key": "k", "reason": "looks fine"}]}))
    assert main_evaluate(["--mutants", "1", "--survivors", str(triage)]) == 2
    assert "looks fine" in capsys.readouterr().err


def _report(path: Path, rows: list[dict]) -> Path:
    path.write_text(json.dumps({"config": {"seed": 1, "exclude": ["faults.py"]}, "mutants": rows}))
    return path


def _row(mutant_id: str, path: str, line_text: str, operator: str) -> dict:
    """A report's entry for the mutant of `operator` on the line of the driver's `path` holding `line_text`."""
    from harness.mutants import SURVIVED, Mutant, MutantResult, edits, package_root

    package, root = package_root("driver_under_test:create_device")
    source = (root / path).read_text()
    [line] = [k + 1 for k, text in enumerate(source.splitlines()) if line_text in text]
    [edit] = [e for e in edits(source) if e.line == line and e.operator == operator]
    mutant = Mutant(mutant_id, package, path, edit)
    return MutantResult(mutant, SURVIVED, diff=mutant.diff(root)).to_json()


def test_an_unknown_recorded_id_is_misuse(tmp_path: Path, capsys) -> None:
    record = _report(tmp_path / "r.json", [_row("M042", "validation/operands.py", "if s <= 0:", "compare_boundary")])
    assert main_evaluate(["--mutants-from", str(record), "--ids", "M041"]) == 2
    assert "records no mutant M041" in capsys.readouterr().err


def test_a_replay_hunts_the_recorded_mutants_with_their_ids_and_reports_the_gone(tmp_path: Path, capsys) -> None:
    live = _row("M042", "validation/operands.py", 'raise invalid(f"{what} is a {type_name(t)} scalar but', "drop_raise")
    gone = {**live, "id": "M043", "key": live["key"].replace(":drop_raise:", ":add_sub:")}
    record, out = _report(tmp_path / "r.json", [gone, live]), tmp_path / "again.json"
    argv = ["--mutants-from", str(record), "--targets", "validation", "--budget-seconds", "3", "--json", str(out)]
    main_evaluate(argv)
    report = json.loads(out.read_text())
    assert [r["id"] for r in report["mutants"]] == ["M042"]
    assert report["mutants"][0]["recorded_key"] == live["key"] == report["mutants"][0]["key"]
    # A scalar with dimensions no longer refused (V3.scalar_rank): the validation target sees it at once.
    assert report["mutants"][0]["status"] == "killed"
    assert report["config"]["replay_of"] == str(record) and report["config"]["exclude"] == ["faults.py"]
    assert [g["id"] for g in report["replay"]["gone"]] == ["M043"] and report["replay"]["in_place"] == 1
    printed = capsys.readouterr().out
    assert "GONE M043" in printed and "1 recorded mutant(s) gone" in printed
