"""Nightly campaigns: libFuzzer processes per target sharing a time budget, working corpora kept apart from the
committed seeds, crash triage (deduplicate by signature, minimize), a findings database across campaigns, and
reports.

The engine emits events (harness.campaign.events) and writes everything to a run folder; the `nnfuzz campaign`
and `nnfuzz findings` commands print.
"""

from harness.campaign.config import CampaignConfig, TargetSpec, available_targets, default_db_path
from harness.campaign.engine import Campaign, CampaignError, new_run_dir, run_campaign
from harness.campaign.finding import Finding
from harness.campaign.findings_db import FIXED, NEW, REPRODUCING, FindingRecord, FindingsDB, FindingsDBError, RunRecord

__all__ = [
    "FIXED",
    "NEW",
    "REPRODUCING",
    "Campaign",
    "CampaignConfig",
    "CampaignError",
    "Finding",
    "FindingRecord",
    "FindingsDB",
    "FindingsDBError",
    "RunRecord",
    "TargetSpec",
    "available_targets",
    "default_db_path",
    "new_run_dir",
    "run_campaign",
]
