"""The public conformance vectors load, convert to hal.Model and back to the same JSON."""

from __future__ import annotations

import gzip
import json
import math
import struct
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from harness.case import (
    ConformanceDataMissing,
    conformance_dir,
    dump_case,
    load_case,
    load_vectors,
    model_from_json,
    model_to_json,
    vector_files,
)
from harness.case.conformance import iter_vector_json
from harness.hal import OperandLifeTime, OperandType, SymmPerChannelQuantParams

EXPECTED_COUNTS = {"aosp_cts_v1_0.jsonl.gz": 310, "aosp_cts_v1_1.jsonl.gz": 364, "aosp_cts_v1_2.jsonl.gz": 3482}
FLOAT32_TYPES = {"FLOAT32", "TENSOR_FLOAT32"}
FLOAT16_TYPES = {"FLOAT16", "TENSOR_FLOAT16"}


def _stored(x: object, type_name: str) -> object:
    """A JSON value as the operand type stores it, computed with struct (independently of the code under test)."""
    if isinstance(x, str):
        return x
    if type_name in FLOAT32_TYPES:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    if type_name in FLOAT16_TYPES:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    return x


def _normalized_operand(o: dict) -> dict:
    o = dict(o)
    if "value" in o:
        o["value"] = [_stored(x, o["type"]) for x in o["value"]]
    return o


def _normalized_model(d: dict) -> dict:
    d = dict(d)
    d["operands"] = [_normalized_operand(o) for o in d["operands"]]
    d["operands"] = [{k: v for k, v in o.items() if k != "numberOfConsumers"} for o in d["operands"]]
    return d


@pytest.fixture(scope="module")
def vectors() -> list[tuple[dict, str]]:
    return list(iter_vector_json())


def test_every_vector_file_has_the_documented_number_of_cases(vectors):
    counts = Counter(source for _, source in vectors)
    assert dict(counts) == EXPECTED_COUNTS
    assert [p.name for p in vector_files()] == sorted(EXPECTED_COUNTS)


def test_every_conformance_model_round_trips_through_hal_model(vectors):
    mismatches = []
    for d, _ in vectors:
        out = model_to_json(model_from_json(d["model"]))
        if _normalized_model(out) != _normalized_model(d["model"]):
            mismatches.append(d["name"])
    assert mismatches == []


def test_round_trip_writes_floats_in_the_shortest_form_of_their_precision(vectors):
    d = next(d for d, _ in vectors if d["name"] == "add_v1_2")
    first = d["model"]["operands"][0]
    assert first["type"] == "TENSOR_FLOAT16"
    m = model_from_json(
        {**d["model"], "operands": [{**first, "lifetime": "CONSTANT_COPY", "value": [1.0009765625, 2e-23, 0.0001]}]}
    )
    # 2e-23 is below half's smallest subnormal and rounds to 0; 0.0001 is stored as 0.00010001659393310547.
    assert model_to_json(m)["operands"][0]["value"] == [1.001, 0.0, 0.0001]


def test_loaded_cases_carry_metadata_and_typed_examples():
    (case,) = load_vectors(names=["add_v1_2"])
    assert (case.name, case.spec, case.version, case.introduced_in) == ("add_v1_2", "add_v1_2", "V1_2", "V1_2")
    assert case.source == "aosp_cts_v1_2.jsonl.gz" and not case.dynamic_output_shape
    assert case.ignored_outputs == [] and case.multinomial_tolerance is None
    (example,) = case.examples
    first, second = example.inputs
    assert first.dtype == np.dtype("<f2") and first.shape == (3,)
    assert first.tolist() == [1.0009765625, 1.0, 2.5]
    assert second.tolist()[0] == 0.0  # 2e-23 is not representable in half precision
    assert example.outputs[0].tolist() == [1.0009765625, 1.0, 6.0]
    assert case.model.main.operands[2].lifetime == OperandLifeTime.CONSTANT_COPY


def test_quantized_examples_keep_the_stored_integers():
    cases = list(load_vectors(names=["conv_quant8"]))
    assert len(cases) == 1
    example = cases[0].examples[0]
    assert example.inputs[0].dtype == np.uint8
    raw = next(d for d, _ in iter_vector_json(names=["conv_quant8"]))
    assert example.inputs[0].ravel().tolist() == raw["examples"][0]["inputs"][0]["value"]
    assert list(example.inputs[0].shape) == raw["examples"][0]["inputs"][0]["dimensions"]


def test_omitted_inputs_are_none_and_zero_sized_outputs_are_empty():
    (lsh,) = load_vectors(names=["lsh_projection_2"])
    assert lsh.examples[0].inputs[1] is None  # the optional weight input is given no value
    (zero,) = load_vectors(names=["add_v1_2_zero_sized"])
    outputs = zero.examples[0].outputs
    assert outputs[0].shape == (0,) and outputs[2].shape == (0, 2, 2, 2)


def test_dynamic_output_shape_cases_have_unknown_output_dimensions_and_known_example_shapes():
    (case,) = load_vectors(names=["conv_float_dynamic_output_shape"])
    assert case.dynamic_output_shape
    out = case.model.main.operands[case.model.main.output_indexes[0]]
    assert all(d == 0 for d in out.dimensions)
    assert all(x > 0 for x in case.examples[0].outputs[0].shape)


def test_per_channel_scales_stay_only_on_per_channel_operands():
    (case,) = load_vectors(names=["conv2d_v1_2_nhwc_channelQuant8"])
    operands = case.model.main.operands
    assert isinstance(operands[1].extra_params, SymmPerChannelQuantParams)
    assert operands[1].extra_params.scales == [0.125]
    assert operands[2].type == OperandType.TENSOR_INT32 and operands[2].extra_params is None
    assert "channelQuant" not in case.model_json["operands"][2]
    assert model_to_json(case.model) == case.model_json


def test_building_every_case_keeps_pools_empty():
    count = 0
    for case in load_vectors():
        assert case.model.pools == []
        assert len(case.examples) >= 1
        count += 1
    assert count == sum(EXPECTED_COUNTS.values())


def test_conformance_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("NNFUZZ_CONFORMANCE_DIR", str(tmp_path))
    assert conformance_dir() == tmp_path.resolve()
    with pytest.raises(ConformanceDataMissing, match="aosp_cts"):
        vector_files()
    monkeypatch.setenv("NNFUZZ_CONFORMANCE_DIR", str(tmp_path / "missing"))
    with pytest.raises(ConformanceDataMissing, match="NNFUZZ_CONFORMANCE_DIR"):
        conformance_dir()


def test_loader_reads_explicit_paths(tmp_path):
    line = {
        "name": "tiny",
        "spec": "tiny",
        "version": "V1_0",
        "introducedIn": None,
        "model": {
            "operands": [
                {
                    "type": "TENSOR_FLOAT32",
                    "dimensions": [2],
                    "scale": 0.0,
                    "zeroPoint": 0,
                    "lifetime": "SUBGRAPH_INPUT",
                },
                {
                    "type": "TENSOR_FLOAT32",
                    "dimensions": [2],
                    "scale": 0.0,
                    "zeroPoint": 0,
                    "lifetime": "SUBGRAPH_OUTPUT",
                },
            ],
            "operations": [{"type": "FLOOR", "inputs": [0], "outputs": [1]}],
            "inputIndexes": [0],
            "outputIndexes": [1],
            "relaxComputationFloat32toFloat16": False,
        },
        "dynamicOutputShape": False,
        "ignoredOutputs": [],
        "multinomialTolerance": None,
        "examples": [
            {
                "inputs": [{"dimensions": [2], "value": ["inf", 1.5]}],
                "outputs": [{"dimensions": [2], "value": ["inf", 1.0]}],
            }
        ],
    }
    path = tmp_path / "mine.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps(line) + "\n\n")
    (case,) = load_vectors([path])
    assert case.source == "mine.jsonl.gz"
    assert math.isinf(case.examples[0].inputs[0][0]) and case.examples[0].outputs[0][1] == 1.0
    assert list(load_vectors([path], names=["other"])) == []


def test_dump_and_load_case_round_trip(tmp_path):
    (case,) = load_vectors(names=["add_v1_2"])
    path = Path(tmp_path) / "case.json"
    obj = {"model": model_to_json(case.model), "name": case.name}
    dump_case(obj, path)
    assert load_case(path) == obj
    text = path.read_text()
    assert text.startswith('{\n "model"') and text.index('"model"') < text.index('"name"')
