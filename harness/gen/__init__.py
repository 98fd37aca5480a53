"""Generators of models, requests and invalid mutations, written once against a Source of choices.

The Source protocol and the helpers drawing on it are in `source`, its implementations in `sources`. Models are
built by the `model` package (with its per-operation `recipes`), invalid variants by `mutations`; `requests`,
`roles`, `cache_corruption` and `burst_packets` generate the rest.

The public names below are imported on first use, so that `harness.gen.source` (the Source protocol, imported
by every target) stays cheap to import and does not pull in the operation catalogue.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "BytesSource": "harness.gen.sources",
    "HypothesisSource": "harness.gen.sources",
    "RandomSource": "harness.gen.sources",
    "RecordingSource": "harness.gen.sources",
    "GenerationRejected": "harness.gen.source",
    "Source": "harness.gen.source",
    "GeneratedModel": "harness.gen.model",
    "ModelConfig": "harness.gen.model",
    "default_operations": "harness.gen.model",
    "generate_model": "harness.gen.model",
    "GeneratedRequest": "harness.gen.requests",
    "RequestConfig": "harness.gen.requests",
    "generate_request": "harness.gen.requests",
    "output_byte_sizes": "harness.gen.requests",
    "MUTATIONS": "harness.gen.mutations",
    "Mutation": "harness.gen.mutations",
    "apply_random": "harness.gen.mutations",
    "mutations_for": "harness.gen.mutations",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from harness.gen.model import GeneratedModel, ModelConfig, default_operations, generate_model
    from harness.gen.mutations import MUTATIONS, Mutation, apply_random, mutations_for
    from harness.gen.requests import (
        GeneratedRequest,
        RequestConfig,
        generate_request,
        output_byte_sizes,
    )
    from harness.gen.source import GenerationRejected, Source
    from harness.gen.sources import BytesSource, HypothesisSource, RandomSource, RecordingSource


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
