"""Public vectors whose expected values contradict the HAL's documented semantics.

The oracle follows the HAL. A vector listed here is reported as skipped with its reason, never as passed, and
the kernels' own tests mark it as an expected failure with the same reason.
"""

from __future__ import annotations

# Spec name -> why its published expected values are not to be trusted.
KNOWN_WRONG_SPECS: dict[str, str] = {
    "instance_normalization": (
        "published expected values divide by sqrt(mean(x^2) + epsilon) where the HAL defines the variance "
        "about the mean; later public releases of this specification corrected exactly these values"
    ),
}


def known_wrong_reason(spec: str) -> str | None:
    """Why the vectors of this spec are known to be wrong, or None."""
    return KNOWN_WRONG_SPECS.get(spec)
