"""report.html: inline SVG charts and the tables of a report, links relative to the run folder."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from harness.campaign.html import line_chart, render_html


def test_a_line_chart_is_valid_svg_with_one_polyline_per_series_scaled_to_the_plot() -> None:
    svg = line_chart({"a": [(0.0, 0.0), (10.0, 5.0)], "b": [(0.0, 5.0), (10.0, None)]}, "T", "seconds", "n")
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    lines = root.findall(f"{ns}polyline")
    assert len(lines) == 2
    first = [tuple(map(float, p.split(","))) for p in lines[0].get("points").split()]
    # Plot area: x from 64 to 520 - 16 = 504; y from 28 + 14 (one legend row) = 42 down 260 - 28 - 44 = 188 pixels
    # to 230 (the top is the largest value).
    assert first == [(64.0, 230.0), (504.0, 42.0)]
    assert {t.text for t in root.iter(f"{ns}text")} >= {"T", "a", "b", "seconds", "n"}


def test_an_empty_chart_says_so() -> None:
    assert "no data" in line_chart({"a": []}, "T", "x", "y")


REPORT = {
    "run": {
        "id": "20300101-000000",
        "driver": "driver_under_test:create_device",
        "faults": ["zero_point_range_unchecked"],
        "targets": ["validation"],
        "jobs": 2,
        "budget_seconds": 60.0,
        "fuzz_seconds": 60.0,
        "sessions": [{}, {}],
        "interrupted": False,
    },
    "totals": {
        "execs": 1000,
        "execs_per_second": 16.7,
        "findings": {"new": 1, "reproducing": 0, "fixed": 1},
        "corpus_found": 5,
        "corpus_merged": 2,
    },
    "targets": {
        "validation": {
            "execs": 1000,
            "execs_per_second": 8.3,
            "worker_seconds": 120.0,
            "restarts": 1,
            "disabled": "",
            "features": 10,
            "findings": 1,
            "corpus": {"seeds": 3, "found": 5, "merged_added": 2, "merged_total": 5},
        }
    },
    "timeline": [{"t": 0.0, "targets": {"validation": {"corpus": 3, "execs_per_second": None}}}],
    "coverage": {
        "ok": True,
        "points": [{"t": 0.0, "branches_covered": 10, "lines_covered": 40, "inputs": 3}],
        "branches_covered": 10,
        "branches_total": 100,
        "branch_percent": 10.0,
        "lines_covered": 40,
        "lines_total": 200,
        "line_percent": 20.0,
        "data_file": "coverage/.coverage",
    },
    "findings": [
        {
            "signature": "abc123",
            "target": "validation",
            "outcome": "FAILURE",
            "rule": "status.invalid_model_rejected",
            "title": "an <invalid> model was accepted",
            "status": "new",
            "new": True,
            "first_run": "20300101-000000",
            "hits": 4,
            "minimized": "structural",
            "repro": "nnfuzz repro findings/abc123/case.json --target validation",
            "files": {"case.json": "findings/abc123/case.json"},
        }
    ],
    "since_last": {
        "previous_run": "x",
        "new": ["abc123"],
        "fixed": ["def456"],
        "reopened": [],
        "still_reproducing": [],
    },
    "unreproduced": [],
    "errors": [],
}


def test_the_page_lists_the_findings_with_links_and_escapes_their_text() -> None:
    page = render_html(REPORT)
    assert '<a href="findings/abc123/case.json">case.json</a>' in page
    assert "an &lt;invalid&gt; model was accepted" in page and "<invalid>" not in page
    assert "10 of 100 branches (10.0 %)" in page
    assert re.search(r"new findings: 1 \(<code>abc123</code>\)", page)
    assert re.search(r"fixed: 1 \(<code>def456</code>\)", page)
    assert page.count("<svg") == 3  # coverage, corpus, executions per second
