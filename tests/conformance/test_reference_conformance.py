"""The reference executor against the public conformance vectors nobody on this project wrote."""

from __future__ import annotations

import pytest

from harness.case import vector_files
from harness.conformance import run_conformance


@pytest.mark.parametrize("file_name", ["aosp_cts_v1_0.jsonl.gz", "aosp_cts_v1_1.jsonl.gz"])
def test_reference_passes_the_v1_0_and_v1_1_vectors(file_name: str) -> None:
    path = next(p for p in vector_files() if p.name == file_name)
    report = run_conformance([path])
    assert report.skipped == 0, report.skipped_reasons()
    assert report.passed >= 0.98 * len(report.results), report.format_failures()
