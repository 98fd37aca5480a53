"""Campaigns end to end on the toy target: one finding per bug, minimized and reproducible; fixed once the bug is
gone; nothing lost when a campaign is killed and resumed; an early stop still reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.campaign import FIXED, NEW, REPRODUCING, Campaign, FindingsDB, run_campaign
from harness.campaign import events as ev
from harness.campaign.corpus import entries, is_whole
from harness.cli.repro_command import main_repro
from harness.runner.execute import decode_bytes
from tests.campaign import toy
from tests.campaign.toy_campaign import config, seed_corpus

ROOT = Path(__file__).resolve().parents[2]


def _run(cfg) -> tuple[dict, list]:
    events: list = []
    report = run_campaign(cfg, events.append)
    return report, events


def test_a_planted_bug_is_one_minimized_finding_that_the_next_campaign_without_it_marks_fixed(tmp_path, capsys):
    corpus, db = seed_corpus(tmp_path / "corpus"), tmp_path / "findings.sqlite"
    report, events = _run(config(tmp_path / "night1", db, corpus, 6.0, ["sum_wraps"]))

    # However many crashing inputs, one signature; each artifact was triaged.
    reported = [e for e in events if isinstance(e, ev.FindingReported)]
    assert len({e.finding.signature for e in reported}) == 1 and len(reported) >= 2
    assert [e.kind for e in reported].count("new") == 1
    [finding] = report["findings"]
    signature = finding["signature"]
    assert finding["status"] == NEW and finding["rule"] == "toy.sum_matches" and finding["hits"] == len(reported)
    assert report["totals"]["findings"] == {"new": 1, "reproducing": 0, "fixed": 0}

    # Stored once: raw input, readable case, traceback, repro command; the case reduced to what the bug needs
    # (the fault wraps sums of three or more values that start with 7 and reach 256): no value can go.
    folder = tmp_path / "night1" / "findings" / signature
    assert {"input.bin", "original.bin", "case.json", "traceback.txt", "finding.json"} <= set(os.listdir(folder))
    values = json.loads((folder / "case.json").read_text())["extras"]["values"]
    assert len(values) >= 3 and values[0] == 7 and sum(values) >= 256
    assert all(len(values) == 3 or sum(values) - v < 256 for v in values[1:])
    # The first crashing input the fuzzer hits may already be minimal: then the stored case is that input, as is,
    # and the bytes are the primary repro; otherwise the reduced case is.
    info = json.loads((folder / "finding.json").read_text())
    original = decode_bytes(toy.TARGET, (folder / "original.bin").read_bytes())
    assert original is not None and original.extras["values"][0] == 7
    stored = json.loads((folder / "case.json").read_text())
    assert info["minimized"] == ("none" if stored == original.to_json() else "structural")
    primary = "case.json" if info["minimized"] == "structural" else "input.bin"
    assert info["repro"].startswith("nnfuzz repro ")
    assert info["repro"].endswith(f"{primary} --target {toy.TARGET_REF} --driver {toy.SPEC} --faults sum_wraps")
    assert (
        main_repro(
            [str(folder / "case.json"), "--target", toy.TARGET_REF, "--driver", toy.SPEC, "--faults", "sum_wraps"]
        )
        == 1
    )
    assert "rule: toy.sum_matches" in capsys.readouterr().out
    assert main_repro([str(folder / "case.json"), "--target", toy.TARGET_REF, "--driver", toy.SPEC]) == 0

    # The report: JSON and HTML, figures over time, coverage of the driver measured by replaying the corpus.
    run = tmp_path / "night1"
    assert json.loads((run / "report.json").read_text())["findings"][0]["signature"] == signature
    assert f'href="findings/{signature}/case.json"' in (run / "report.html").read_text()
    assert report["timeline"] and report["targets"]["toy_sum"]["execs"] > 0
    coverage = report["coverage"]
    assert coverage["ok"] and 0 < coverage["branches_covered"] <= coverage["branches_total"]
    assert [p["t"] for p in coverage["points"]] == sorted(p["t"] for p in coverage["points"])
    # The seeds stay as they were; what the fuzzers found is in the working corpus (here the run folder's own).
    assert entries(corpus / "toy_sum") == ["seed0", "seed1", "seed2"]
    working = entries(run / "targets" / "toy_sum" / "corpus")
    assert working and report["targets"]["toy_sum"]["corpus"]["working"] == len(working)

    # The next campaign, the bug gone: the finding is replayed first and marked fixed.
    report2, events2 = _run(config(tmp_path / "night2", db, corpus, 3.0, []))
    rechecked = [(e.finding.signature, e.status) for e in events2 if isinstance(e, ev.KnownRechecked)]
    assert rechecked == [(signature, FIXED)]
    assert report2["since_last"]["fixed"] == [signature] and report2["since_last"]["previous_run"] == "night1"
    record = FindingsDB(db).fetch(signature)
    assert record.status == FIXED and record.fixed_run == "night2" and record.first_run == "night1"

    # Back again: it reproduces at once (reopened) and the fuzzers find it again (still reproducing, not new).
    report3, events3 = _run(config(tmp_path / "night3", db, corpus, 3.0, ["sum_wraps"]))
    rechecked = [(e.finding.signature, e.status) for e in events3 if isinstance(e, ev.KnownRechecked)]
    assert rechecked == [(signature, REPRODUCING)]
    assert report3["since_last"]["reopened"] == [signature]
    assert {e.kind for e in events3 if isinstance(e, ev.FindingReported)} <= {"known", "duplicate"}
    assert FindingsDB(db).fetch(signature).status == REPRODUCING


def test_a_campaign_starts_from_the_working_corpus_the_last_one_grew_and_leaves_the_seeds_alone(tmp_path):
    corpus, db, work = seed_corpus(tmp_path / "corpus"), tmp_path / "findings.sqlite", tmp_path / "work"
    first, _ = _run(config(tmp_path / "night1", db, corpus, 3.0, [], work=work))
    grown = entries(work / "toy_sum")
    assert grown and first["targets"]["toy_sum"]["corpus"] | {"carried": 0} == first["targets"]["toy_sum"]["corpus"]
    assert first["targets"]["toy_sum"]["corpus"]["working"] == len(grown)

    second, events = _run(config(tmp_path / "night2", db, corpus, 1.0, [], work=work))
    [loaded] = [e for e in events if isinstance(e, ev.CorpusLoaded)]
    assert (loaded.seeds, loaded.carried, loaded.working_folder) == (3, len(grown), str(work / "toy_sum"))
    assert second["targets"]["toy_sum"]["corpus"]["carried"] == len(grown)
    # Coverage at the start of the second (seeds and carried entries, time 0) is where the first ended.
    assert second["coverage"]["start_branches_covered"] >= first["coverage"]["branches_covered"]
    assert set(grown) <= set(entries(work / "toy_sum"))
    assert entries(corpus / "toy_sum") == ["seed0", "seed1", "seed2"]
    # The run folder has the line-by-line coverage, linked from the report, and which target reached what.
    assert (tmp_path / "night2" / "coverage" / "html" / "index.html").is_file()
    assert second["coverage"]["html"] == "coverage/html/index.html"
    assert 'href="coverage/html/index.html"' in (tmp_path / "night2" / "report.html").read_text()
    reached = second["targets"]["toy_sum"]["reached"]  # import-time branches belong to no target
    assert 0 < reached["branches"] == reached["only"] <= second["coverage"]["branches_covered"]
    files = second["coverage"]["files"]
    assert files and all((tmp_path / "night2" / f["href"]).is_file() for f in files if f["href"])
    assert [f["missing"] for f in files] == sorted((f["missing"] for f in files), reverse=True)


def _campaign_process(run: Path, db: Path, corpus: Path, budget: float, faults: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.campaign.toy_campaign", str(run), str(db), str(corpus), str(budget), faults],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def _processes_using(folder: Path) -> list[int]:
    """Processes whose command line names the folder (the campaign's libFuzzer workers)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(folder).encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def test_a_campaign_killed_with_sigkill_resumes_and_loses_no_finding_and_no_corpus_entry(tmp_path):
    corpus, db, run = seed_corpus(tmp_path / "corpus"), tmp_path / "findings.sqlite", tmp_path / "run"
    process = _campaign_process(run, db, corpus, 12.0, "sum_wraps")
    seen: list[dict] = []
    assert process.stdout is not None
    try:
        for line in process.stdout:
            seen.append(json.loads(line))
            if seen[-1]["event"] == "FindingReported" and len(entries(run / "targets" / "toy_sum" / "corpus")) >= 3:
                break
        time.sleep(1.0)  # let more artifacts and corpus entries pile up half-processed
        corpus_before = set(entries(run / "targets" / "toy_sum" / "corpus"))
        artifacts_before = set(entries(run / "targets" / "toy_sum" / "findings"))
        reported_before = {e["finding"]["signature"] for e in seen if e["event"] == "FindingReported"}
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stdout.close()
    # Its libFuzzer workers die with it.
    deadline = time.monotonic() + 10
    while _processes_using(run) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_using(run) == []
    assert reported_before and artifacts_before

    resumed = _campaign_process(run, db, corpus, 12.0, "sum_wraps")
    out, _ = resumed.communicate(timeout=120)
    events = [json.loads(line) for line in out.splitlines()]
    assert resumed.returncode == 0
    assert events[0]["event"] == "CampaignStarted" and events[0]["resumed"] and events[0]["remaining_s"] < 12.0

    report = json.loads((run / "report.json").read_text())
    corpus_after = set(entries(run / "targets" / "toy_sum" / "corpus"))
    assert {n for n in corpus_before if is_whole(run / "targets" / "toy_sum" / "corpus" / n)} <= corpus_after
    triaged = {json.loads(line)["artifact"] for line in (run / "triage.jsonl").read_text().splitlines()}
    assert {f"toy_sum/{name}" for name in artifacts_before} <= triaged
    assert reported_before <= {f["signature"] for f in report["findings"]}
    assert len(report["run"]["sessions"]) == 2 and report["run"]["fuzz_seconds"] <= 12.0 + 1.0
    record = FindingsDB(db).fetch(next(iter(reported_before)))
    assert record is not None and record.status == NEW and record.first_run == "run"


def test_a_campaign_stopped_early_reports_and_a_resume_spends_the_rest_of_the_budget(tmp_path):
    corpus, db, run = seed_corpus(tmp_path / "corpus"), tmp_path / "findings.sqlite", tmp_path / "run"
    cfg = config(run, db, corpus, 8.0, [], jobs=1)
    cfg.coverage = False
    campaign = Campaign(cfg)
    threading.Timer(2.0, campaign.request_stop).start()
    report = campaign.run_campaign()
    assert report["run"]["interrupted"] and 1.0 < report["run"]["fuzz_seconds"] < 6.0
    assert (run / "report.html").is_file()

    events: list = []
    report = Campaign(cfg, events.append).run_campaign()
    started = next(e for e in events if isinstance(e, ev.CampaignStarted))
    assert started.resumed and 2.0 < started.remaining_s < 7.0
    assert not report["run"]["interrupted"] and 7.0 <= report["run"]["fuzz_seconds"] <= 8.0
    assert not any(isinstance(e, ev.KnownRechecked) for e in events)
