"""`nnfuzz evaluate`: the catalogue is listed; planted faults are found; false alarms are reported; the JSON shape."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.cli.evaluate_command import main_evaluate
from tests.runner.bad_drivers import CATALOGUE

TOY = ["--driver", "tests.runner.bad_drivers:toy_device", "--catalogue", "tests.runner.bad_drivers"]
FAULT_KEYS = {"name", "area", "found", "seconds", "target", "rule"}


def test_list_shows_every_fault_of_the_driver_catalogue_with_its_area(capsys) -> None:
    from driver_under_test.faults import CATALOGUE as DRIVER_CATALOGUE

    assert main_evaluate(["--list"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.strip() and line[0] != " "}
    assert len(DRIVER_CATALOGUE) > 0
    assert {name: lines.get(name) for name in DRIVER_CATALOGUE} == {n: f.area for n, f in DRIVER_CATALOGUE.items()}
    assert f"{len(DRIVER_CATALOGUE)} faults" in out


def test_every_toy_fault_is_found_by_the_rule_it_breaks_and_the_clean_driver_raises_no_alarm(tmp_path: Path) -> None:
    out = tmp_path / "evaluate.json"
    code = main_evaluate(
        [*TOY, "--targets", "tests.runner.toy_targets:PREPARE", "--budget-seconds", "2", "--timeout", "1"]
        + ["--json", str(out), "--out", str(tmp_path / "cases")]
    )
    report = json.loads(out.read_text())
    assert code == 0
    assert set(report) == {"faults", "false_alarms"}
    assert all(set(f) == FAULT_KEYS for f in report["faults"])
    by_name = {f["name"]: f for f in report["faults"]}
    assert set(by_name) == set(CATALOGUE)
    assert {n: (f["found"], f["target"], f["rule"]) for n, f in by_name.items()} == {
        "abort_in_prepare": (True, "toy_prepare", "driver.process_survives"),
        "hang_in_prepare": (True, "toy_prepare", "driver.answers_in_time"),
        "reject_everything": (True, "toy_prepare", "toy.valid_model_accepted"),
    }
    assert by_name["abort_in_prepare"]["area"] == "robustness"
    assert 1.0 <= by_name["hang_in_prepare"]["seconds"] < 2 + 1  # a hang is known only once the time limit passed
    assert report["false_alarms"] == []


def test_failures_the_clean_driver_shares_are_false_alarms_and_fail_the_evaluation(tmp_path: Path, capsys) -> None:
    out = tmp_path / "evaluate.json"
    code = main_evaluate(
        [*TOY, "--targets", "tests.runner.toy_targets:TOY", "--faults", "reject_everything"]
        + ["--budget-seconds", "1", "--timeout", "0.5", "--json", str(out), "--out", str(tmp_path / "cases")]
    )
    report = json.loads(out.read_text())
    assert code == 1
    assert report["faults"] == [
        {
            "name": "reject_everything",
            "area": "validation",
            "found": False,
            "seconds": None,
            "target": None,
            "rule": None,
        }
    ]
    # TOY breaks its rule, aborts, loops and raises whatever the driver: each kind is one alarm, with its case saved.
    rules = {a["rule"] for a in report["false_alarms"]}
    assert {"toy.rule_holds", "driver.process_survives", "harness.target_raises_nothing"} <= rules
    assert all(Path(a["case_file"]).is_file() for a in report["false_alarms"])
    assert "false alarm" in capsys.readouterr().out


def test_an_unknown_fault_is_misuse(capsys) -> None:
    assert main_evaluate([*TOY, "--faults", "no_such_fault"]) == 2
    assert "no_such_fault" in capsys.readouterr().err


def test_the_report_on_the_real_driver_has_the_documented_shape(tmp_path: Path) -> None:
    from driver_under_test.faults import CATALOGUE as DRIVER_CATALOGUE

    fault = next(f for f in DRIVER_CATALOGUE.values() if f.area == "validation")
    out = tmp_path / "evaluate.json"
    code = main_evaluate(
        ["--faults", fault.name, "--targets", "validation", "--budget-seconds", "1.5"]
        + ["--json", str(out), "--out", str(tmp_path / "cases")]
    )
    report = json.loads(out.read_text())
    assert code in (0, 1)
    assert set(report) == {"faults", "false_alarms"}
    [entry] = report["faults"]
    assert set(entry) == FAULT_KEYS and (entry["name"], entry["area"]) == (fault.name, "validation")
    assert isinstance(entry["found"], bool)
    assert (entry["seconds"] is None) == (not entry["found"])
    assert code == (0 if entry["found"] and not report["false_alarms"] else 1)


def test_an_evaluation_runs_every_target_but_the_one_judging_engines_unless_it_is_named(capsys) -> None:
    from harness.cli.evaluate_command import _targets
    from harness.runner import registered_targets

    registered = set(registered_targets())
    assert "differential" in registered
    default = _targets(argparse.Namespace(targets=None))
    assert set(default) == registered - {"differential"}
    assert _targets(argparse.Namespace(targets=["differential"])) == ["differential"]
