"""`nnfuzz bench`: rates per target as a table and JSON; the bare driver calls and overhead for validation/execution."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.cli.bench_command import main_bench


def test_a_toy_target_gets_a_rate_and_no_bare_figures(tmp_path: Path, capsys) -> None:
    out = tmp_path / "bench.json"
    args = ["--targets", "tests.runner.toy_targets:PREPARE", "--driver", "tests.runner.bad_drivers:toy_device"]
    assert main_bench([*args, "--seconds", "0.3", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert list(report) == ["targets", "cpu"] and list(report["targets"]) == ["toy_prepare"]
    figures = report["targets"]["toy_prepare"]
    assert figures["execs_per_second"] > 0 and figures["failures"] == 0
    # Cases cost processor time, and the run's cases cannot have used more of it than the machine's processors
    # gave the process while it ran.
    assert 0 < figures["cpu_us_per_case"] * figures["executions"] <= 1e6 * figures["seconds"] * (os.cpu_count() or 1)
    assert "overhead_ratio" not in figures
    assert "toy_prepare" in capsys.readouterr().out


def test_validation_and_execution_get_bare_driver_rates_and_an_overhead_ratio(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    assert main_bench(["--targets", "validation", "execution", "--seconds", "1", "--json", str(out)]) == 0
    targets = json.loads(out.read_text())["targets"]
    for name in ("validation", "execution"):
        figures = targets[name]
        assert figures["execs_per_second"] > 0
        assert figures["bare_driver_calls_per_second"] > 0
        ratio = figures["bare_driver_calls_per_second"] / figures["execs_per_second"]
        assert abs(figures["overhead_ratio"] - ratio) < 0.01 * ratio + 0.01


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity on this platform")
def test_the_run_is_pinned_to_one_cpu_and_the_affinity_is_restored(tmp_path: Path) -> None:
    before = os.sched_getaffinity(0)
    cpu = max(before)
    out = tmp_path / "bench.json"
    args = ["--targets", "tests.runner.toy_targets:PREPARE", "--driver", "tests.runner.bad_drivers:toy_device"]
    assert main_bench([*args, "--seconds", "0.2", "--cpu", str(cpu), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["cpu"] == cpu
    assert os.sched_getaffinity(0) == before
    assert main_bench([*args, "--seconds", "0.2", "--no-pin", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["cpu"] is None


def test_a_cpu_the_process_may_not_use_is_misuse(capsys) -> None:
    assert main_bench(["--targets", "validation", "--cpu", "100000", "--seconds", "0.1"]) == 2
    assert "CPU 100000" in capsys.readouterr().err


def test_targets_may_be_given_comma_separated(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    toy = "tests.runner.toy_targets:PREPARE"
    args = ["--targets", f"{toy},{toy}", "--driver", "tests.runner.bad_drivers:toy_device", "--seconds", "0.1"]
    assert main_bench([*args, "--json", str(out)]) == 0
    assert list(json.loads(out.read_text())["targets"]) == ["toy_prepare"]
