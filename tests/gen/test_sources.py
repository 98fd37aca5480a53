"""The Source implementations: answers within bounds, determinism, minimal answers once exhausted."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.gen.sources import BytesSource, HypothesisSource, RandomSource, RecordingSource, width_bounds


def _draws(src) -> list:
    """A fixed script of calls covering every method."""
    out = []
    for k in range(40):
        out.append(src.integer(-k, 3 * k + 1))
        out.append(src.boolean())
        out.append(src.choice("abcdefg"[: 1 + k % 7]))
        out.append(src.floats(-2.5, 7.0, width=(16, 32, 64)[k % 3]))
        out.append(src.bytes(k % 5))
    return out


def _is_width(x: float, width: int) -> bool:
    if width == 64:
        return True
    if width == 32:
        return struct.unpack("<f", struct.pack("<f", x))[0] == x
    return float(np.float16(x)) == x


@pytest.mark.parametrize("make", [lambda: RandomSource(7), lambda: BytesSource(bytes(range(256)) * 3)])
def test_same_choices_for_the_same_seed_or_bytes(make) -> None:
    assert _draws(make()) == _draws(make())


def test_random_sources_with_different_seeds_differ() -> None:
    assert _draws(RandomSource(1)) != _draws(RandomSource(2))


@pytest.mark.parametrize("src", [RandomSource(0, budget=0), BytesSource(b"")])
def test_exhausted_sources_give_minimal_answers(src) -> None:
    assert src.exhausted or isinstance(src, RandomSource)
    assert src.integer(3, 9) == 3
    assert src.boolean() is False
    assert src.choice(["first", "second"]) == "first"
    assert src.floats(1.5, 4.0) == 1.5
    assert src.bytes(4) == b""
    assert src.exhausted


def test_random_source_is_exhausted_after_its_budget() -> None:
    src = RandomSource(3, budget=5)
    for _ in range(5):
        src.integer(0, 10**6)
    assert not src.exhausted
    assert src.integer(10, 10**6) == 10
    assert src.exhausted


def test_bytes_source_reads_little_endian_integers_modulo_the_range() -> None:
    # 0x0102 = 258; the range [0, 999] needs two bytes: 258 % 1000 = 258.
    src = BytesSource(b"\x02\x01\x07")
    assert src.integer(0, 999) == 258
    # One byte 0x07 for the range [10, 13]: 10 + 7 % 4 = 13.
    assert src.integer(10, 13) == 13
    assert src.exhausted


def test_bytes_source_bytes_and_booleans_read_the_data_in_order() -> None:
    src = BytesSource(b"\x01\x00abc")
    assert src.boolean() is True
    assert src.boolean() is False
    assert src.bytes(5) == b"abc"


@given(st.binary(max_size=64), st.floats(-1e6, 1e6), st.floats(0, 1e6), st.sampled_from([16, 32, 64]))
def test_bytes_source_floats_lie_in_range_and_are_representable(
    data: bytes, lo: float, span: float, width: int
) -> None:
    hi = lo + span
    a, b = width_bounds(lo, hi, width)
    src = BytesSource(data)
    for _ in range(4):
        x = src.floats(lo, hi, width=width)
        assert _is_width(x, width)
        if a <= b and lo <= a:
            assert a <= x <= b


@given(st.data())
@settings(max_examples=30)
def test_hypothesis_source_answers_within_bounds(data) -> None:
    src = HypothesisSource(data)
    assert 2 <= src.integer(2, 5) <= 5
    assert src.choice([4, 5, 6]) in (4, 5, 6)
    x = src.floats(0.1, 0.3, width=32)
    assert 0.1 <= x <= 0.3 and _is_width(x, 32)
    assert len(src.bytes(3)) == 3
    assert not src.exhausted


def test_recording_source_records_every_choice_in_order() -> None:
    src = RecordingSource(BytesSource(b"\x05\x01"))
    src.integer(0, 9)
    src.boolean()
    src.choice(["x"])
    assert [c[0] for c in src.calls] == ["integer", "boolean", "choice"]
    assert src.calls[0] == ("integer", (0, 9), 5)
    assert "integer(0, 9) -> 5" in src.describe()


def test_bytes_source_decodes_choices_quickly() -> None:
    # Loose: 20,000 mixed choices well under a second (the fuzz targets need thousands of cases per second).
    import time

    src = BytesSource(bytes(range(256)) * 400)
    started = time.process_time()
    for _ in range(5000):
        src.integer(0, 1000)
        src.boolean()
        src.choice((1, 2, 3))
        src.floats(-1.0, 1.0)
    assert time.process_time() - started < 1.0
