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
