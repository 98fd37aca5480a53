"""Hypothesis strategies over the generators: each runs harness.gen on a HypothesisSource, so examples shrink
through the generators' own choices (fewer operations, lower ranks, smaller dimensions, features switched off).

To drive a generator or a target inside a test body, take `st.data()` and wrap it: `HypothesisSource(data)`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import reject
from hypothesis import strategies as st

from harness.gen.model import GeneratedModel, ModelConfig, generate_model
from harness.gen.requests import GeneratedRequest, RequestConfig, generate_request
from harness.gen.source import GenerationRejected
from harness.gen.sources import HypothesisSource
from harness.hal import Model

_DEFAULT_MODEL = ModelConfig()
_DEFAULT_REQUEST = RequestConfig()


def _model(draw: Any, config: ModelConfig) -> GeneratedModel:
    try:
        return generate_model(HypothesisSource(draw), config)
    except GenerationRejected:
        reject()


@st.composite
def models(draw: Any, config: ModelConfig = _DEFAULT_MODEL) -> GeneratedModel:
    """A generated valid model with its input values."""
    return _model(draw, config)


@st.composite
def model_and_inputs(draw: Any, config: ModelConfig = _DEFAULT_MODEL) -> tuple[Model, list[np.ndarray | None]]:
    """A valid hal.Model and one value per main input (None = no value)."""
    generated = _model(draw, config)
    return generated.model, generated.inputs


@st.composite
def requests_for(draw: Any, generated: GeneratedModel, config: RequestConfig = _DEFAULT_REQUEST) -> GeneratedRequest:
    """A request (pool layout, memory kinds, dimensions, too-small outputs) for a generated model."""
    return generate_request(HypothesisSource(draw), generated, config)


@st.composite
def models_with_requests(
    draw: Any, model_config: ModelConfig = _DEFAULT_MODEL, request_config: RequestConfig = _DEFAULT_REQUEST
) -> tuple[GeneratedModel, GeneratedRequest]:
    """A generated model together with a request for it."""
    generated = _model(draw, model_config)
    return generated, generate_request(HypothesisSource(draw), generated, request_config)
