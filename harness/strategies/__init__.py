"""Hypothesis strategies: thin wrappers that run the generators of harness.gen on a Hypothesis-backed Source."""

from harness.strategies.generated import model_and_inputs, models, models_with_requests, requests_for

__all__ = ["model_and_inputs", "models", "models_with_requests", "requests_for"]
