"""Cache corruptions: each operation changes exactly what it says, and the classification follows D24 from the
bytes and handles alone (expected files and verdicts worked out by hand)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.gen.cache_corruption import (
    DATA_CHANGED,
    EITHER,
    EXPECTATIONS,
    RACE,
    REFUSE_HANDLES,
    REFUSE_MODEL,
    ROUND_TRIP,
    CacheCorruptionConfig,
    HandleSpec,
    SavedCache,
    apply_corruption,
    classify,
    effective_content,
    generate_corruption,
    needs_other,
    save_handles,
)
from harness.gen.sources import HypothesisSource

TOKEN = bytes(range(32))
SAVED = SavedCache(model=(b"MODEL-CACHE-0123",), data=(b"constants",), token=TOKEN)
OTHER = SavedCache(model=(b"another model cache",), data=(b"other constants",), token=bytes(32))
NEEDED = (1, 1)


def retrieve(*ops: dict, other: SavedCache | None = None):
    r = apply_corruption({"kind": "test", "ops": list(ops), "save": []}, SAVED, other)
    return r, classify(r, SAVED, NEEDED)


def test_no_operation_gives_the_saved_files_back_and_a_round_trip() -> None:
    r, c = retrieve()
    assert [f.content for f in r.model] == [b"MODEL-CACHE-0123"]
    assert [f.content for f in r.data] == [b"constants"]
    assert r.token == TOKEN
    assert c.expect == ROUND_TRIP


def test_a_bit_flip_changes_one_bit_of_the_model_cache_which_must_be_refused() -> None:
    # Bit 10 is bit 2 of byte 1: "O" (0x4F) becomes 0x4B ("K").
    r, c = retrieve({"op": "flip_bit", "side": "model", "file": 0, "bit": 10})
    assert r.model[0].content == b"MKDEL-CACHE-0123"
    assert c.expect == REFUSE_MODEL


def test_bit_positions_and_file_indexes_wrap_around() -> None:
    # 16 bytes = 128 bits: bit 130 is bit 2 of byte 0 ("M" 0x4D -> 0x49 "I"); file 5 of one file is file 0.
    r, _ = retrieve({"op": "flip_bit", "side": "model", "file": 5, "bit": 130})
    assert r.model[0].content == b"IODEL-CACHE-0123"


def test_a_changed_data_cache_is_a_data_change_not_a_refusal() -> None:
    r, c = retrieve({"op": "flip_bit", "side": "data", "file": 0, "bit": 0})
    assert r.data[0].content == b"bonstants"
    assert c.expect == DATA_CHANGED


@pytest.mark.parametrize(
    ("op", "content"),
    [
        ({"op": "truncate", "side": "model", "file": 0, "keep": 21}, b"MODEL"),  # 21 mod 16 = 5
        ({"op": "extend", "side": "model", "file": 0, "data": "0000"}, b"MODEL-CACHE-0123\0\0"),
        ({"op": "swap_ranges", "side": "model", "file": 0, "a": 0, "b": 6, "length": 5}, b"CACHE-MODEL0123"[:0]),
    ],
    ids=["truncate", "extend", "swap_ranges"],
)
def test_length_and_range_operations_modify_the_model_cache(op: dict, content: bytes) -> None:
    r, c = retrieve(op)
    if op["op"] == "swap_ranges":
        # [0, 5) "MODEL" and [6, 11) "CACHE" trade places.
        content = b"CACHE-MODEL-0123"
    assert r.model[0].content == content
    assert c.expect == REFUSE_MODEL


def test_swapping_equal_ranges_leaves_the_bytes_and_so_a_round_trip() -> None:
    saved = SavedCache(model=(b"abab",), data=(b"d",), token=TOKEN)
    r = apply_corruption(
        {"ops": [{"op": "swap_ranges", "side": "model", "file": 0, "a": 0, "b": 2, "length": 2}]}, saved
    )
    assert r.model[0].content == b"abab"
    assert classify(r, saved, NEEDED).expect == ROUND_TRIP


def test_a_cache_moved_to_an_offset_its_handle_names_is_untouched() -> None:
    r, c = retrieve({"op": "place_at", "side": "model", "file": 0, "offset": 300, "shift": 0})
    f = r.model[0]
    assert f.offset == 300 and len(f.content) == 316
    assert effective_content(f) == b"MODEL-CACHE-0123"
    assert c.expect == ROUND_TRIP


@pytest.mark.parametrize("shift", [-1, 1, 40])
def test_a_handle_offset_that_misses_the_cache_start_is_a_modified_model_cache(shift: int) -> None:
    r, c = retrieve({"op": "place_at", "side": "model", "file": 0, "offset": 8, "shift": shift})
    assert r.model[0].offset == 8 + shift
    assert c.expect == REFUSE_MODEL


def test_the_descriptor_position_is_free() -> None:
    r, c = retrieve({"op": "seek", "side": "data", "file": 0, "position": 77})
    assert r.data[0].seek == 77
    assert c.expect == ROUND_TRIP


@pytest.mark.parametrize(
    "op",
    [
        {"op": "file_count", "side": "model", "delta": -1},
        {"op": "file_count", "side": "data", "delta": 1},
        {"op": "handle_fds", "side": "model", "file": 0, "count": 0},
        {"op": "handle_fds", "side": "data", "file": 0, "count": 2},
        {"op": "access", "side": "model", "file": 0, "mode": "wo"},
        {"op": "handle_offset", "side": "data", "file": 0, "offset": -3},
        {"op": "token_length", "length": 31},
        {"op": "token_length", "length": 0},
    ],
    ids=lambda op: f"{op['op']}-{op.get('side', '')}{op.get('delta', op.get('count', op.get('length', '')))}",
)
def test_bad_handles_and_tokens_must_be_refused(op: dict) -> None:
    _, c = retrieve(op)
    assert c.expect == REFUSE_HANDLES


def test_bad_handles_come_before_a_changed_model_cache() -> None:
    _, c = retrieve(
        {"op": "flip_bit", "side": "model", "file": 0, "bit": 3}, {"op": "file_count", "side": "data", "delta": 1}
    )
    assert c.expect == REFUSE_HANDLES


def test_read_only_files_break_a_hal_convention_harmlessly() -> None:
    _, c = retrieve({"op": "access", "side": "data", "file": 0, "mode": "ro"})
    assert c.expect == EITHER


def test_another_token_must_be_refused() -> None:
    r, c = retrieve({"op": "flip_token_bit", "bit": 9})
    assert r.token == bytes([0, 1 ^ 2]) + TOKEN[2:]
    assert c.expect == REFUSE_MODEL


def test_the_other_models_cache_under_this_token_must_be_refused() -> None:
    r, c = retrieve({"op": "use_other_cache"}, other=OTHER)
    assert [f.content for f in r.model] == [b"another model cache"]
    assert c.expect == REFUSE_MODEL


def test_an_identical_other_cache_is_judged_by_its_bytes_a_round_trip() -> None:
    _, c = retrieve({"op": "use_other_cache"}, other=SavedCache(SAVED.model, SAVED.data, bytes(32)))
    assert c.expect == ROUND_TRIP


def test_operations_needing_another_model_do_nothing_without_one() -> None:
    assert needs_other({"ops": [{"op": "use_other_cache"}]})
    r, c = retrieve({"op": "use_other_cache"}, {"op": "rewrite_during_retrieval"})
    assert not r.race
    assert c.expect == ROUND_TRIP


def test_another_models_data_file_is_a_data_change() -> None:
    r, c = retrieve({"op": "replace_file", "side": "data", "file": 0, "from": 0}, other=OTHER)
    assert r.data[0].content == b"other constants"
    assert c.expect == DATA_CHANGED


def test_model_and_data_files_swapped_must_be_refused() -> None:
    r, c = retrieve({"op": "swap_files", "a": ["model", 0], "b": ["data", 0]})
    assert r.model[0].content == b"constants" and r.data[0].content == b"MODEL-CACHE-0123"
    assert c.expect == REFUSE_MODEL


def test_a_rewrite_during_retrieval_is_a_race() -> None:
    r, c = retrieve({"op": "rewrite_during_retrieval"}, other=OTHER)
    assert r.race
    assert c.expect == RACE


def test_an_unknown_operation_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown cache corruption operation"):
        retrieve({"op": "scramble"})


def test_save_handles_follow_the_save_operations() -> None:
    specs = save_handles(
        [
            {"op": "save_count", "side": "model", "delta": 1},
            {"op": "save_access", "side": "data", "file": 0, "mode": "ro"},
        ],
        (1, 1),
    )
    assert specs == {"model": [HandleSpec(0), HandleSpec(1)], "data": [HandleSpec(0, access="ro")]}
    assert save_handles([{"op": "save_count", "side": "data", "delta": -1}], (1, 1))["data"] == []
    assert save_handles([{"op": "save_fds", "side": "model", "file": 3, "count": 2}], (1, 1))["model"] == [
        HandleSpec(0, fds=2)
    ]


# --- generation -----------------------------------------------------------------------------------------------

SAVED_CACHES = st.builds(
    SavedCache,
    st.lists(st.binary(max_size=40), min_size=1, max_size=3).map(tuple),
    st.lists(st.binary(max_size=40), min_size=1, max_size=3).map(tuple),
    st.binary(min_size=32, max_size=32),
)


def _draw(data, kind: str | None = None) -> dict:
    config = CacheCorruptionConfig(kinds=(kind,)) if kind else CacheCorruptionConfig()
    return generate_corruption(HypothesisSource(data), config)


@given(st.data(), SAVED_CACHES)
def test_every_generated_corruption_is_json_and_applies_to_any_cache(data, saved: SavedCache) -> None:
    corruption = _draw(data)
    assert json.loads(json.dumps(corruption)) == corruption
    other = data.draw(SAVED_CACHES)
    r = apply_corruption(corruption, saved, other)
    needed = (len(saved.model), len(saved.data))
    assert classify(r, saved, needed).expect in EXPECTATIONS


@given(st.data(), SAVED_CACHES)
def test_untouched_corruptions_never_require_a_refusal(data, saved: SavedCache) -> None:
    r = apply_corruption(_draw(data, "untouched"), saved)
    assert classify(r, saved, (len(saved.model), len(saved.data))).expect in (ROUND_TRIP, EITHER)


@given(st.data(), SAVED_CACHES)
def test_a_token_corruption_always_requires_a_refusal(data, saved: SavedCache) -> None:
    r = apply_corruption(_draw(data, "token"), saved)
    assert r.token != saved.token
    assert classify(r, saved, (len(saved.model), len(saved.data))).expect == REFUSE_MODEL


@given(st.data(), SAVED_CACHES)
def test_a_handles_corruption_always_requires_refusing_the_handles(data, saved: SavedCache) -> None:
    r = apply_corruption(_draw(data, "handles"), saved)
    assert classify(r, saved, (len(saved.model), len(saved.data))).expect == REFUSE_HANDLES


@given(st.data(), SAVED_CACHES)
def test_a_data_corruption_never_requires_refusing_the_model(data, saved: SavedCache) -> None:
    r = apply_corruption(_draw(data, "data"), saved)
    assert [effective_content(f) for f in r.model] == list(saved.model)
    assert classify(r, saved, (len(saved.model), len(saved.data))).expect in (DATA_CHANGED, ROUND_TRIP)
