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
        "corpus_carried": 7,
        "corpus_found": 5,
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
            "corpus": {"seeds": 3, "carried": 7, "found": 5, "working": 12},
            "reached": {"branches": 9, "only": 9, "lines": 38, "files": {"driver_under_test/device.py": 6}},
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
        "start_branches_covered": 8,
        "data_file": "coverage/.coverage",
        "html": "coverage/html/index.html",
        "files": [
            {
                "file": "driver_under_test/device.py",
                "branches": 60,
                "covered": 6,
                "missing": 54,
                "href": "coverage/html/z_1_device_py.html",
            },
            {"file": "driver_under_test/<odd>.py", "branches": 40, "covered": 4, "missing": 36, "href": None},
        ],
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


def test_the_page_links_the_line_by_line_coverage_and_lists_files_and_targets() -> None:
    page = render_html(REPORT)
    assert '<a href="coverage/html/index.html">line by line</a>' in page and "8 branches at the start" in page
    # The files in the report's order (most missed branches first), each linked to its page when it has one.
    first = page.index('<a href="coverage/html/z_1_device_py.html">driver_under_test/device.py</a>')
    assert first < page.index("driver_under_test/&lt;odd&gt;.py")
    assert "validation 6" in page  # branches of that file the target reached
    assert re.search(r"<td>validation</td><td class=\"num\">9</td><td class=\"num\">9</td>", page)
    assert ">7</td>" in page and ">12</td>" in page  # carried, working
