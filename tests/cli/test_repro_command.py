"""`nnfuzz repro`: a saved case is printed, replayed isolated and judged; a regression test can be written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.repro_command import main_repro
from harness.gen.sources import BytesSource
from harness.runner.replay import load_input, repro_command, target_from_path
from harness.targets.base import TARGETS
from tests.runner.toy_targets import ADD_MODEL, MODEL_ACCEPTED, TOY

ROOT = Path(__file__).resolve().parents[2]
PREPARE = "tests.runner.toy_targets:PREPARE"
TOY_REF = "tests.runner.toy_targets:TOY"
BAD = "tests.runner.bad_drivers:"


@pytest.fixture
def case_file(tmp_path: Path) -> Path:
    path = tmp_path / "case.json"
    path.write_text(json.dumps({"target": "toy_prepare", "model": ADD_MODEL, "extras": {"n": 2}}))
    return path


def test_a_crashing_case_prints_the_case_the_verdict_and_the_stack(case_file: Path, capsys) -> None:
    code = main_repro([str(case_file), "--target", PREPARE, "--driver", BAD + "crashing_device", "--timeout", "20"])
    out = capsys.readouterr().out
    assert code == 1
    assert '"operations": [' in out and '"ADD"' in out  # the case, as readable JSON
    assert "verdict: CRASH" in out and "rule: driver.process_survives" in out
    assert "SIGABRT" in out and "bad_drivers.py" in out  # the stack faulthandler wrote


def test_a_passing_case_exits_0_and_the_json_report_holds_case_and_verdict(
    case_file: Path, tmp_path: Path, capsys
) -> None:
    report = tmp_path / "report.json"
    code = main_repro([str(case_file), "--target", PREPARE, "--driver", BAD + "toy_device", "--json", str(report)])
    assert code == 0
    assert "verdict: SUCCESS" in capsys.readouterr().out
    data = json.loads(report.read_text())
    assert data["verdict"]["outcome"] == "SUCCESS"
    assert data["case"]["model"] == ADD_MODEL and data["case"]["extras"] == {"n": 2}


def test_raw_bytes_are_decoded_and_shown_before_they_run(tmp_path: Path, capsys) -> None:
    data = next(bytes([i]) for i in range(256) if TOY.decode(BytesSource(bytes([i]))).extras["action"] == "violate")
    path = tmp_path / "crash-0001"
    path.write_bytes(data)
    code = main_repro([str(path), "--target", TOY_REF, "--driver", BAD + "toy_device"])
    out = capsys.readouterr().out
    assert code == 1
    assert "from raw fuzzer bytes" in out and '"action": "violate"' in out
    assert "verdict: FAILURE" in out and "rule: toy.rule_holds" in out


def test_raw_bytes_without_a_target_are_refused_with_advice(tmp_path: Path, capsys) -> None:
    path = tmp_path / "crash-0002"
    path.write_bytes(b"\x01\x02")
    assert main_repro([str(path)]) == 2
    assert "--target" in capsys.readouterr().err


def test_the_target_of_raw_bytes_comes_from_the_folder_they_sit_in(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(TARGETS, "toy", TOY)
    corpus_entry = tmp_path / "corpus" / "toy" / "abc"
    finding = tmp_path / "runs" / "fuzz-toy-20250101-000000" / "findings" / "crash-abc"
    for path in (corpus_entry, finding):
        path.parent.mkdir(parents=True)
        path.write_bytes(b"\x00")
    assert target_from_path(corpus_entry) == target_from_path(finding) == "toy"
    assert load_input(finding).case.extras == {"action": TOY.decode(BytesSource(b"\x00")).extras["action"]}


def test_the_repro_command_shows_paths_from_the_working_directory_and_only_what_is_not_a_default(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "runs" / "r1" / "case.json"
    assert repro_command(path, "validation") == "nnfuzz repro runs/r1/case.json --target validation"
    assert repro_command(path, "validation", "m:f", ["a", "b"]) == (
        "nnfuzz repro runs/r1/case.json --target validation --driver m:f --faults a,b"
    )
    assert repro_command(Path("/else where/crash-1"), "t") == "nnfuzz repro '/else where/crash-1' --target t"


def _pytest(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_emitted_regression_test_fails_on_the_faulty_driver_and_passes_on_a_clean_one(
    case_file: Path, tmp_path: Path
) -> None:
    faulty, clean = tmp_path / "faulty" / "test_regression.py", tmp_path / "clean" / "test_regression.py"
    args = [str(case_file), "--target", PREPARE, "--driver", BAD + "toy_device", "--quiet"]
    assert main_repro([*args, "--faults", "reject_everything", "--emit-pytest", str(faulty)]) == 1
    assert main_repro([*args, "--emit-pytest", str(clean)]) == 0
    assert MODEL_ACCEPTED in faulty.read_text()  # the test names the rule it guards
    failing, passing = _pytest(faulty), _pytest(clean)
    assert failing.returncode == 1 and "1 failed" in failing.stdout, failing.stdout + failing.stderr
    assert passing.returncode == 0 and "1 passed" in passing.stdout, passing.stdout + passing.stderr
