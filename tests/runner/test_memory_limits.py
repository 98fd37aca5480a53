"""The workers' memory limit and the per-case memory budget (D26): a blow-up becomes a finding of its own."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.oracle.verdict import Outcome, Verdict
from harness.runner.execute import Judged
from harness.runner.pool import DEFAULT_MEMORY_LIMIT_MB, MEMORY_BUDGET_ENV, WorkerPool
from harness.runner.worker import peak_rss_mb, within_memory_budget
from harness.targets import get_target


def test_a_case_growing_memory_past_the_budget_fails_with_its_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "64")
    target = get_target("request")
    ok = Judged(Verdict(Outcome.SUCCESS, target="request"))
    grown = within_memory_budget(ok, peak_rss_mb() - 100, target)
    assert grown.verdict.outcome == Outcome.FAILURE and grown.verdict.rule == "limits.memory_bounded"
    assert within_memory_budget(ok, peak_rss_mb() - 10, target) is ok


def test_the_limit_turns_a_huge_allocation_into_a_memory_error() -> None:
    code = (
        "from harness.runner.worker import limit_memory\n"
        "assert limit_memory(512)\n"
        "try:\n    bytearray(1 << 30)\nexcept MemoryError:\n    print('refused')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "refused", out.stderr


def test_pools_default_to_the_limit_and_take_another(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NNFUZZ_WORKER_MEMORY_MB", raising=False)
    assert WorkerPool().memory_limit == DEFAULT_MEMORY_LIMIT_MB
    assert WorkerPool(memory_limit=0).memory_limit == 0
    monkeypatch.setenv("NNFUZZ_WORKER_MEMORY_MB", "2048")
    assert WorkerPool().memory_limit == 2048
