"""report.html: the campaign report as one self-contained page, charts drawn as inline SVG (no dependency)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
_STATUS_CLASS = {"new": "new", "reproducing": "repro", "fixed": "fixed"}

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 72em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; font-size: 90%; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 90%; }
.new { background: #fde0dc; } .repro { background: #fff4d6; } .fixed { background: #e3f4e1; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5em; }
figure { margin: 0; } figcaption { font-size: 90%; color: #555; }
"""


def _fmt(value: object, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return escape(str(value))


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    magnitude = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1.0
    step = next((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw), raw)
    start = (lo // step) * step
    ticks = []
    value = start
    while value <= hi + step * 1e-9:
        if value >= lo - step * 1e-9:
            ticks.append(round(value, 6))
        value += step
    return ticks


def line_chart(
    series: dict[str, Sequence[tuple[float, float]]],
    title: str,
    x_label: str,
    y_label: str,
    width: int = 520,
    height: int = 260,
) -> str:
    """An SVG line chart of named (x, y) series, with axes, ticks and a legend."""
    points = [p for values in series.values() for p in values if p[1] is not None]
    rows = (len(series) + 2) // 3  # legend rows, between the title and the plot
    left, right, top, bottom = 64, 16, 28 + 14 * rows, 44
    height += 14 * rows
    plot_w, plot_h = width - left - right, height - top - bottom
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">']
    parts.append(f"<title>{escape(title)}</title>")
    parts.append(f'<text x="{left}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>')
    if not points:
        parts.append(f'<text x="{left}" y="{top + plot_h / 2}" font-size="12">no data</text></svg>')
        return "".join(parts)
    x_hi = max(p[0] for p in points) or 1.0
    y_hi = max(p[1] for p in points) or 1.0
    x_ticks, y_ticks = _ticks(0.0, x_hi), _ticks(0.0, y_hi)
    x_hi, y_hi = max(x_hi, x_ticks[-1]), max(y_hi, y_ticks[-1])

    def sx(x: float) -> float:
        return left + plot_w * x / x_hi

    def sy(y: float) -> float:
        return top + plot_h * (1 - y / y_hi)

    axis = 'stroke="#888" stroke-width="1"'
    parts.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" {axis}/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" {axis}/>')
    for t in x_ticks:
        x = sx(t)
        parts.append(f'<line x1="{x:.1f}" y1="{top + plot_h}" x2="{x:.1f}" y2="{top + plot_h + 4}" {axis}/>')
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 16}" font-size="10" text-anchor="middle">{t:g}</text>')
    for t in y_ticks:
        y = sy(t)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 3:.1f}" font-size="10" text-anchor="end">{t:g}</text>')
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 6}" font-size="11" text-anchor="middle">{escape(x_label)}</text>'
    )
    parts.append(
        f'<text x="12" y="{top + plot_h / 2}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 12 {top + plot_h / 2})">{escape(y_label)}</text>'
    )
    for i, (name, values) in enumerate(series.items()):
        colour = COLOURS[i % len(COLOURS)]
        kept = [(x, y) for x, y in values if y is not None]
        if not kept:
            continue
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in kept)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        if len(kept) == 1:
            parts.append(f'<circle cx="{sx(kept[0][0]):.1f}" cy="{sy(kept[0][1]):.1f}" r="3" fill="{colour}"/>')
        lx, ly = left + 8 + 130 * (i % 3), 34 + 14 * (i // 3)
        parts.append(f'<rect x="{lx}" y="{ly - 8}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{lx + 14}" y="{ly + 1}" font-size="11">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _charts(report: dict) -> str:
    timeline = report.get("timeline") or []
    names = report["run"]["targets"]
    corpus = {n: [(s["t"], s["targets"].get(n, {}).get("corpus")) for s in timeline] for n in names}
    rates = {n: [(s["t"], s["targets"].get(n, {}).get("execs_per_second")) for s in timeline] for n in names}
    charts = []
    coverage = report.get("coverage")
    if coverage and coverage.get("points"):
        total = coverage.get("branches_total") or 0
        pts = [(p["t"], p["branches_covered"]) for p in coverage["points"]]
        label = f"branches covered (of {total:,})"
        charts.append(line_chart({"driver": pts}, "Branch coverage of the driver over time", "seconds", label))
    charts.append(line_chart(corpus, "Corpus size per target", "seconds", "entries"))
    charts.append(line_chart(rates, "Executions per second per target", "seconds", "exec/s"))
    return '<div class="charts">' + "".join(f"<figure>{c}</figure>" for c in charts) + "</div>"


def _files(row: dict) -> str:
    return " ".join(f'<a href="{escape(path)}">{escape(name)}</a>' for name, path in row.get("files", {}).items())


def _class_cell(row: dict) -> str:
    """A finding's class on an engine, with the kernel sets that show it or the divergence it is ("-" for the
    driver's own findings)."""
    c = row.get("classification")
    if not c:
        return "-"
    detail = c.get("divergence") or ", ".join(c.get("kernel_sets", []))
    reason = escape(c.get("reason", ""))
    return f"<b>{escape(c['class'])}</b><br><small>{escape(detail)}</small><br><small>{reason}</small>"


def _graph(row: dict) -> str:
    """The reduced graph of a finding on an engine, one operation a line."""
    if not row.get("classification") or not row.get("graph"):
        return ""
    return "<br><small><code>" + "<br>".join(escape(line) for line in row["graph"]) + "</code></small>"


def _coverage_section(report: dict) -> str:
    """Which target reached what, and the files with the most missed branches first, linked to their lines."""
    coverage = report["coverage"]
    out = ["<h2>Driver coverage</h2>"]
    if coverage.get("html"):
        out.append(
            f'<p><a href="{escape(coverage["html"])}">Line by line</a> (coverage.py; each line lists the targets '
            "that ran it under <i>contexts</i>).</p>"
        )
    reached = [(name, t["reached"]) for name, t in report["targets"].items() if t.get("reached")]
    if reached:
        rows = []
        for name, r in reached:
            top = ", ".join(f"{escape(f)} ({n})" for f, n in list(r["files"].items())[:3])
            rows.append((escape(name), _fmt(r["branches"]), _fmt(r["only"]), _fmt(r["lines"]), top))
        out.append("<h3>Which target reached what</h3>")
        headers = ["target", "branches", "reached by no other target", "lines", "files it reaches most (branches)"]
        out.append(_table(headers, rows, numeric=(1, 2, 3)))
    files = coverage.get("files") or []
    if files:
        per_target = {name: t["reached"]["files"] for name, t in report["targets"].items() if t.get("reached")}
        rows = []
        for f in files:
            name = escape(f["file"])
            link = f'<a href="{escape(f["href"])}">{name}</a>' if f.get("href") else name
            share = _fmt(round(100.0 * f["covered"] / f["branches"], 1)) if f["branches"] else "-"
            who = ", ".join(
                f"{escape(t)} {n}" for t, n in ((t, fs.get(f["file"], 0)) for t, fs in per_target.items()) if n
            )
            rows.append((link, _fmt(f["covered"]), _fmt(f["branches"]), _fmt(f["missing"]), share, who or "-"))
        out.append("<h3>Files, most missed branches first</h3>")
        headers = ["file", "covered branches", "branches", "missed", "%", "branches reached per target"]
        out.append(_table(headers, rows, numeric=(1, 2, 3, 4)))
    return "\n".join(out)


def render_html(report: dict) -> str:
    """The report page."""
    run, totals = report["run"], report["totals"]
    counts = totals["findings"]
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>nnfuzz campaign {escape(run['id'])}</title><style>{_STYLE}</style></head><body>",
        f"<h1>Campaign {escape(run['id'])}</h1>",
    ]
    summary = [
        ("driver", f"<code>{escape(run['driver'])}</code>"),
        ("faults", escape(", ".join(run["faults"]) or "none")),
        ("targets", escape(", ".join(run["targets"]))),
        ("jobs", _fmt(run["jobs"])),
        ("fuzzing time", f"{_fmt(run['fuzz_seconds'])} s of {_fmt(float(run['budget_seconds']))} s"),
        ("sessions", f"{len(run['sessions'])}{' (interrupted)' if run['interrupted'] else ''}"),
        ("executions", f"{_fmt(totals['execs'])} ({_fmt(totals['execs_per_second'])} exec/s)"),
        ("findings", f"{counts['new']} new, {counts['reproducing']} still reproducing, {counts['fixed']} fixed"),
        (
            "corpus",
            f"{_fmt(totals.get('corpus_carried'))} working-corpus entries carried from earlier campaigns, "
            f"{_fmt(totals['corpus_found'])} found",
        ),
    ]
    coverage = report.get("coverage")
    if coverage:
        if coverage.get("ok", True) and coverage.get("branches_covered") is not None:
            link = f' (<a href="{escape(coverage["html"])}">line by line</a>)' if coverage.get("html") else ""
            summary.append(
                (
                    "driver coverage",
                    f"{_fmt(coverage['branches_covered'])} of {_fmt(coverage['branches_total'])} branches "
                    f"({_fmt(coverage['branch_percent'])} %), {_fmt(coverage['lines_covered'])} of "
                    f"{_fmt(coverage['lines_total'])} lines ({_fmt(coverage['line_percent'])} %){link}; "
                    f"{_fmt(coverage.get('start_branches_covered'))} branches at the start "
                    "(seeds and carried entries)",
                )
            )
        else:
            summary.append(("driver coverage", escape(coverage.get("detail") or "not measured")))
    out.append(_table(["", ""], [(f"<b>{k}</b>", v) for k, v in summary]))

    since = report["since_last"]
    out.append("<h2>Since the last campaign</h2>")
    if since.get("previous_run"):
        out.append(f"<p>Compared with run <code>{escape(since['previous_run'])}</code>.</p>")
    else:
        out.append("<p>No earlier campaign of this driver in the database.</p>")
    items = [
        ("new findings", since["new"]),
        ("fixed", since["fixed"]),
        ("reopened (fixed before, failing again)", since["reopened"]),
        ("still reproducing", since["still_reproducing"]),
    ]
    out.append("<ul>")
    for label, sigs in items:
        listed = ", ".join(f"<code>{escape(s)}</code>" for s in sigs) or "none"
        out.append(f"<li>{escape(label)}: {len(sigs)} {'(' + listed + ')' if sigs else ''}</li>")
    previous = since.get("previous")
    if previous and coverage and previous.get("branches_covered") is not None:
        delta = (coverage.get("branches_covered") or 0) - previous["branches_covered"]
        out.append(f"<li>branch coverage: {delta:+,} branches ({previous['branches_covered']:,} before)</li>")
    out.append("</ul>")

    out.append("<h2>Findings</h2>")
    rows = []
    for f in report["findings"]:
        status = f["status"]
        css = _STATUS_CLASS.get(status, "")
        label = f"{status}{' (first seen in this run)' if f['new'] and status != 'new' else ''}"
        rows.append(
            (
                f'<span class="{css}">{escape(label)}</span>',
                f"<code>{escape(f['signature'])}</code>",
                _class_cell(f),
                escape(f["target"]),
                escape(f["outcome"]),
                f"<code>{escape(str(f['rule']))}</code><br>{escape(f['title'])}{_graph(f)}",
                _fmt(f["hits"]),
                escape(f"{f['first_run']}"),
                escape(f.get("minimized") or "-"),
                _files(f),
                f"<code>{escape(f['repro'])}</code>",
            )
        )
    if rows:
        headers = ["status", "signature", "class", "target", "outcome", "rule", "hits", "first run", "minimized"]
        out.append(_table([*headers, "files", "reproduce"], rows, numeric=(6,)))
    else:
        out.append("<p>No findings.</p>")

    out.append("<h2>Targets</h2>")
    target_rows = []
    for name, t in report["targets"].items():
        c = t["corpus"]
        target_rows.append(
            (
                escape(name),
                _fmt(t["execs"]),
                _fmt(t["execs_per_second"]),
                _fmt(t["worker_seconds"]),
                _fmt(t["restarts"]),
                _fmt(c["seeds"]),
                _fmt(c.get("carried")),
                _fmt(c["found"]),
                _fmt(c.get("working")),
                _fmt(t["features"]),
                _fmt(t["findings"]) + (f"<br>{escape(t['disabled'])}" if t["disabled"] else ""),
            )
        )
    headers = ["target", "execs", "exec/s", "worker s", "restarts", "seeds", "carried", "found", "working", "features"]
    out.append(_table([*headers, "findings"], target_rows, numeric=tuple(range(1, 10))))
    out.append(
        "<p>Seeds: the committed corpus. Carried: working-corpus entries earlier campaigns left, where this one "
        "started. Found: entries this campaign added. Working: the working corpus now "
        f"(<code>{escape(str(run.get('work_corpus') or 'in the run folder'))}</code>).</p>"
    )

    out.append("<h2>Over time</h2>")
    out.append(_charts(report))
    if coverage:
        out.append(_coverage_section(report))
    if report.get("unreproduced"):
        out.append("<h2>Artifacts that pass when replayed alone</h2><ul>")
        for u in report["unreproduced"]:
            out.append(f'<li><a href="{escape(u["file"])}">{escape(u["artifact"])}</a> ({escape(str(u["kind"]))})</li>')
        out.append("</ul>")
    if report.get("not_replayed"):
        counts = ", ".join(f"{escape(t)}: {n}" for t, n in report["not_replayed"].items())
        out.append(
            f"<p>Artifacts not replayed (a sample was triaged while they piled up; the files are kept): {counts}</p>"
        )
    if report.get("errors"):
        out.append("<h2>Triage errors</h2>")
        out.extend(f"<pre>{escape(e)}</pre>" for e in report["errors"])
    out.append("</body></html>")
    return "\n".join(out) + "\n"
