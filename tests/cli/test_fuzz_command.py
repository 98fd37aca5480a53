"""`nnfuzz fuzz`: a time-boxed run with a status line, a summary.json, and findings listed with their repro command,
triaged as a campaign triages them (one minimized finding folder per signature, the run's own database)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli.findings_command import main_findings
from harness.cli.fuzz_command import main_fuzz

ROOT = Path(__file__).resolve().parents[2]


def test_a_short_run_writes_a_summary_with_its_figures_and_keeps_the_seed_corpus_intact(tmp_path: Path, capsys) -> None:
    # Whether the fault-free driver passes is tests/fuzz's business; here: the run's mechanics.
    seeds = sorted(p.name for p in (ROOT / "corpus" / "validation").iterdir())
    out = tmp_path / "run"
    code = main_fuzz(["validation", "--budget-seconds", "3", "--out", str(out)])
    captured = capsys.readouterr()
    summary = json.loads((out / "summary.json").read_text())
    assert code == (1 if summary["findings"] else 0), captured.out + captured.err
    assert summary["target"] == "validation" and summary["jobs"] == 1
    assert summary["stats"]["execs"] > 0 and summary["stats"]["execs_per_second"] > 0
    assert summary["elapsed_seconds"] < 30
    assert "[validation]" in captured.err  # the status line
    assert any(out.joinpath("corpus").iterdir())  # new inputs go to the run's corpus...
    assert sorted(p.name for p in (ROOT / "corpus" / "validation").iterdir()) == seeds  # ...not to the seeds
    for finding in summary["findings"]:
        assert finding["repro"].startswith("nnfuzz repro ") and finding["verdict"]["outcome"] != "SUCCESS"


def test_a_crashing_driver_gives_a_finding_listed_with_its_repro_command(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    driver = "tests.runner.bad_drivers:crashing_device"
    code = main_fuzz(["validation", "--budget-seconds", "20", "--out", str(out), "--driver", driver])
    stdout = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert code == 1
    [finding] = summary["findings"]
    assert Path(finding["file"]).name.startswith("crash-")
    assert finding["repro"] == f"nnfuzz repro {finding['file']} --target validation --driver {driver}"
    # Replayed isolated, the finding is the abort, named by its rule.
    assert finding["verdict"]["outcome"] == "CRASH" and finding["verdict"]["rule"] == "driver.process_survives"
    assert finding["repro"] in stdout
    # Stored as a campaign stores it: a folder named by the signature, with the smallest input's repro command.
    [distinct] = summary["distinct"]
    assert distinct["signature"] == finding["verdict"]["signature"] and distinct["repro"] in stdout
    folder = out / "findings" / distinct["signature"]
    assert {"finding.json", "original.bin", "traceback.txt"} <= {p.name for p in folder.iterdir()}
    assert main_findings(["--db", summary["database"], "--show", distinct["signature"]]) == 0
    assert "driver.process_survives" in capsys.readouterr().out


def test_a_target_without_a_script_is_misuse(capsys) -> None:
    assert main_fuzz(["no_such_target", "--budget-seconds", "1"]) == 2
    assert "no fuzz script" in capsys.readouterr().err
