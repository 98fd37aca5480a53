"""The libFuzzer process engine: status lines parsed into figures; a run of a small fuzz script, with a finding."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from harness.runner.libfuzzer import FuzzConfig, FuzzStats, build_command, run_fuzzer

ROOT = Path(__file__).resolve().parents[2]

# Lines as libFuzzer prints them (plain mode, then -fork mode, then -print_final_stats).
LINES = [
    "INFO: Seed: 1234",
    "#2\tINITED cov: 12 ft: 13 corp: 1/1b exec/s: 0 rss: 40Mb",
    "#1024\tpulse  cov: 30 ft: 41 corp: 7/96b lim: 14 exec/s: 512 rss: 44Mb",
    "#1100\tNEW    cov: 31 ft: 42 corp: 8/100b lim: 14 exec/s: 550 rss: 44Mb L: 4/4 MS: 1 ChangeByte-",
    "artifact_prefix='/tmp/x/'; Test unit written to /tmp/x/crash-0123",
    "#9000: cov: 40 ft: 50 corp: 20 exec/s 1500 oom/timeout/crash: 0/1/2 time: 6s job: 3 dft_time: 0",
    "stat::number_of_executed_units: 9500",
    "stat::average_exec_per_sec:     1400",
]


def test_status_lines_give_executions_rate_coverage_corpus_and_findings() -> None:
    stats = FuzzStats()
    seen = []
    for line in LINES:
        if stats.update(line):
            seen.append((stats.execs, stats.execs_per_second, stats.coverage, stats.corpus, stats.findings))
    assert seen == [
        (2, 0, 12, 1, 0),
        (1024, 512, 30, 7, 0),
        (1100, 550, 31, 8, 0),
        (1100, 550, 31, 8, 1),
        (9000, 1500, 40, 20, 3),  # fork mode counts its children's timeouts and crashes
        (9500, 1500, 40, 20, 3),
        (9500, 1400, 40, 20, 3),
    ]


def test_the_command_reads_seeds_writes_to_the_run_folder_and_forks_only_to_keep_going(tmp_path: Path) -> None:
    config = FuzzConfig("validation", tmp_path, budget_s=7, seed_corpus=[tmp_path / "seeds"], script=tmp_path / "f.py")
    command = build_command(config)
    assert command[:3] == [str(tmp_path / "f.py"), str(tmp_path / "corpus"), str(tmp_path / "seeds")]
    assert f"-artifact_prefix={tmp_path / 'findings'}/" in command and "-max_total_time=7" in command
    assert not any(c.startswith("-fork") for c in command)
    assert "-fork=2" in build_command(FuzzConfig("validation", tmp_path, jobs=2, script=tmp_path / "f.py"))


TOY_SCRIPT = '''#!/usr/bin/env python3
"""A toy fuzz script: fails on inputs of four bytes or more."""
import sys

import atheris


def TestOneInput(data):
    if len(data) >= 4:
        raise RuntimeError("long input")


atheris.Setup(sys.argv, TestOneInput)
atheris.Fuzz()
'''


def test_a_run_stops_at_its_finding_and_reports_it(tmp_path: Path) -> None:
    script = tmp_path / "fuzz_toy.py"
    script.write_text(TOY_SCRIPT)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    updates: list[int] = []
    config = FuzzConfig("toy", tmp_path / "run", budget_s=20, script=script)
    run = run_fuzzer(config, lambda s: updates.append(s.execs))
    assert run.exit_code != 0 and run.elapsed < 20
    assert [p.name[:6] for p in run.findings] == ["crash-"]
    assert len(run.findings[0].read_bytes()) >= 4
    assert run.stats.findings == 1 and updates
    assert "Uncaught Python exception" in config.log_path.read_text()


def test_the_fuzz_environment_names_the_driver_and_puts_this_python_first(tmp_path: Path) -> None:
    from harness.runner.libfuzzer import fuzz_environment

    env = fuzz_environment("pkg:factory", ["a", "b"])
    assert (env["NNFUZZ_DRIVER"], env["NNFUZZ_FAULTS"]) == ("pkg:factory", "a,b")
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
