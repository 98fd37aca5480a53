"""The registry of known divergences: each entry's example shows the divergence on exactly the kernel sets the
entry names (and passes on the others), and the entry matches what it shows."""

from __future__ import annotations

import numpy as np
import pytest

from harness.case import Case, inputs_from_json, model_from_json, simple_request_json
from harness.drivers import create_device, variants
from harness.hal import element_size
from harness.oracle.divergences import DIVERGENCES, Divergence, Sighting, matching
from harness.oracle.verdict import Outcome, Verdict
from harness.reference import run_model
from harness.targets import TARGETS

DRIVER = "driver_under_test:create_device"


def example_case(divergence: Divergence) -> Case:
    """The execution target's case of an entry's example (a plain request sized by the reference's outputs)."""
    return case_of(divergence.example)


def case_of(example: dict) -> Case:
    """The execution target's case of a model JSON and its inputs (a plain request sized by the reference's
    outputs)."""
    model_json, inputs_json = example["model"], example["inputs"]
    model = model_from_json(model_json)
    inputs = inputs_from_json(inputs_json, model)
    outputs = run_model(model, inputs).outputs
    main = model.main
    sizes = [element_size(main.operands[i].type) * int(np.size(o)) for i, o in zip(main.output_indexes, outputs)]
    request = simple_request_json(model, inputs, sizes)
    execution = {"measure": False, "deadlineNs": None, "loopTimeoutNs": None}
    return Case("execution", model_json, request, inputs_json, execution, {"valid": True, "insufficient": []})


def engine_variants(engine: str) -> dict[str, str]:
    """Kernel set -> driver spec of the bundled driver's variants over this engine."""
    found = {}
    for spec in variants(DRIVER).values():
        identity = create_device(spec).engine_identity()
        if identity is not None and identity[0].split()[0] == engine:
            found[identity[1]] = spec
    return found


@pytest.mark.parametrize("entry", sorted(DIVERGENCES))
def test_each_divergence_shows_on_its_kernel_sets_only_and_matches_what_it_shows(entry: str) -> None:
    divergence = DIVERGENCES[entry]
    kernel_sets = engine_variants(divergence.engine)
    assert divergence.kernel_sets <= set(kernel_sets), "the entry names kernel sets the engine does not have"
    for kernel_set, spec in sorted(kernel_sets.items()):
        case = example_case(divergence)
        verdict = TARGETS["execution"].run(case, create_device(spec))
        if kernel_set in divergence.kernel_sets:
            assert not verdict.ok, f"{entry} no longer shows on {kernel_set}: update the registry"
            sighting = Sighting(divergence.engine, kernel_set, case.materialized().model, verdict)
            assert matching(sighting) is divergence, (kernel_set, verdict.rule, verdict.title)
        else:
            assert verdict.ok, (kernel_set, verdict.rule, verdict.title)
        case.close()


def test_a_sighting_of_another_engine_or_kernel_set_matches_nothing() -> None:
    divergence = DIVERGENCES["litert-reference-lrn-window"]
    case = example_case(divergence)
    verdict = TARGETS["execution"].run(case, create_device("driver_under_test:create_litert_reference_device"))
    model = case.materialized().model
    assert matching(Sighting("ai-edge-litert", "reference", model, verdict)) is divergence
    assert matching(Sighting("ai-edge-litert", "optimized", model, verdict)) is None
    assert matching(Sighting("onnxruntime", "reference", model, verdict)) is None
    case.close()


def test_registering_an_id_twice_is_an_error() -> None:
    from harness.oracle.divergences import register

    with pytest.raises(RuntimeError, match="twice"):
        register(DIVERGENCES["litert-reference-no-elu"])


def test_wrong_values_downstream_of_a_divergent_operation_show_that_divergence() -> None:
    from harness.oracle.verdict import Outcome, Verdict

    divergence = DIVERGENCES["litert-reference-lrn-window"]
    model_json = {**divergence.example["model"]}
    operands = [dict(o) for o in model_json["operands"]]
    lrn_out = model_json["outputIndexes"][0]
    operands[lrn_out]["lifetime"] = "TEMPORARY_VARIABLE"
    operands.append({**operands[lrn_out], "lifetime": "SUBGRAPH_OUTPUT"})
    abs_op = {"type": "ABS", "inputs": [lrn_out], "outputs": [len(operands) - 1]}
    model_json.update(
        operands=operands, operations=[*model_json["operations"], abs_op], outputIndexes=[len(operands) - 1]
    )
    wrong_abs = Verdict(Outcome.FAILURE, rule="accuracy.float32", title="output 0 differs", locus="ABS")
    assert matching(Sighting("ai-edge-litert", "reference", model_from_json(model_json), wrong_abs)) is divergence
    alone = {**model_json, "operations": [abs_op], "inputIndexes": [lrn_out]}
    alone["operands"] = [{**o, "lifetime": "SUBGRAPH_INPUT"} if k == lrn_out else o for k, o in enumerate(operands)]
    assert matching(Sighting("ai-edge-litert", "reference", model_from_json(alone), wrong_abs)) is None


def _int32(value: int) -> dict:
    return {"type": "INT32", "dimensions": [], "lifetime": "CONSTANT_COPY", "value": [value]}


def test_int8_pooling_of_a_run_time_tensor_shows_the_qdq_propagation_divergence() -> None:
    tensor = {"type": "TENSOR_QUANT8_ASYMM_SIGNED", "scale": 0.05, "zeroPoint": 1}
    # AVERAGE_POOL_2D, explicit form: no padding, strides 1, a 1x1 window, no activation.
    params = [_int32(v) for v in (0, 0, 0, 0, 1, 1, 1, 1, 0)]
    model = {
        "operands": [
            {**tensor, "dimensions": [1, 2, 2, 3], "lifetime": "SUBGRAPH_INPUT"},
            *params,
            {**tensor, "dimensions": [1, 2, 2, 3], "lifetime": "SUBGRAPH_OUTPUT"},
        ],
        "operations": [{"type": "AVERAGE_POOL_2D", "inputs": list(range(10)), "outputs": [10]}],
        "inputIndexes": [0],
        "outputIndexes": [10],
    }
    case = case_of({"model": model, "inputs": [{"dimensions": [1, 2, 2, 3], "value": list(range(-6, 6))}]})
    verdict = TARGETS["execution"].run(case, create_device("driver_under_test:create_onnxruntime_device"))
    assert not verdict.ok
    sighting = Sighting("onnxruntime", "all", case.materialized().model, verdict)
    assert matching(sighting) is DIVERGENCES["onnxruntime-qdq-s8-propagation"]
    case.close()


def _wrong(locus: str, rule: str = "accuracy.quant8") -> object:
    from harness.oracle.verdict import Outcome, Verdict

    return Verdict(Outcome.FAILURE, rule=rule, title="output 0 differs", locus=locus)


@pytest.mark.parametrize(("scale", "shown"), [(4e-10, True), (4.7e-10, False), (1e-3, False)])
def test_relu_bound_overflow_matches_only_an_upper_bound_beyond_int32(scale: float, shown: bool) -> None:
    divergence = DIVERGENCES["litert-relu-bound-overflow"]
    model_json = {**divergence.example["model"]}
    model_json["operands"] = [{**o, "scale": scale} for o in model_json["operands"]]
    model = model_from_json(model_json)
    found = matching(Sighting("ai-edge-litert", "optimized", model, _wrong("RELU1")))
    assert (found is divergence) is shown


def test_if_branch_folded_mul_needs_a_branch_output_computed_from_constants_only() -> None:
    divergence = DIVERGENCES["litert-if-branch-folded-mul"]
    model_json = divergence.example["model"]
    model = model_from_json(model_json)
    assert matching(Sighting("ai-edge-litert", "reference", model, _wrong("IF", "accuracy.int32"))) is divergence
    # The same branches reading a branch input instead of their constant: nothing is computed in Prepare.
    referenced = []
    for branch in model_json["referenced"]:
        operands = [dict(o) for o in branch["operands"]]
        operands[0] = {k: v for k, v in operands[0].items() if k != "value"} | {"lifetime": "SUBGRAPH_INPUT"}
        referenced.append({**branch, "operands": operands, "inputIndexes": [0]})
    fed = model_from_json({**model_json, "referenced": referenced})
    assert matching(Sighting("ai-edge-litert", "reference", fed, _wrong("IF", "accuracy.int32"))) is None


def _constant_dequantize_beside_a_rescaling_maximum(first: dict) -> dict:
    """A DEQUANTIZE of `first` (a constant or an input) beside a MAXIMUM whose operands' scales differ (the
    translation rescales them, so the XNNPACK partition holds more than the DEQUANTIZE)."""
    tensor = {"type": "TENSOR_QUANT8_ASYMM_SIGNED", "dimensions": [1, 2], "zeroPoint": 0}
    model = {
        "operands": [
            {"type": "TENSOR_QUANT8_SYMM", "dimensions": [3], "scale": 0.125, "zeroPoint": 0, **first},
            {"type": "TENSOR_FLOAT32", "dimensions": [3], "lifetime": "SUBGRAPH_OUTPUT"},
            {**tensor, "scale": 0.125, "lifetime": "SUBGRAPH_INPUT"},
            {**tensor, "scale": 0.0625, "lifetime": "SUBGRAPH_INPUT"},
            {**tensor, "scale": 0.03125, "lifetime": "SUBGRAPH_OUTPUT"},
        ],
        "operations": [
            {"type": "DEQUANTIZE", "inputs": [0], "outputs": [1]},
            {"type": "MAXIMUM", "inputs": [2, 3], "outputs": [4]},
        ],
        "inputIndexes": [2, 3] if first["lifetime"] == "CONSTANT_COPY" else [0, 2, 3],
        "outputIndexes": [1, 4],
    }
    inputs = [{"dimensions": [1, 2], "value": [1, 2]}, {"dimensions": [1, 2], "value": [3, -1]}]
    if first["lifetime"] != "CONSTANT_COPY":
        inputs.insert(0, {"dimensions": [3], "value": [1, -2, 3]})
    return {"model": model, "inputs": inputs}


def test_a_constant_dequantize_whose_xnnpack_runtime_is_set_up_shows_wrong_values_of_that_divergence() -> None:
    # With another node in the delegate's partition its runtime is set up, and the DEQUANTIZE output is never
    # written: the same bug as the failed first invoke, seen as values.
    case = case_of(_constant_dequantize_beside_a_rescaling_maximum({"lifetime": "CONSTANT_COPY", "value": [1, -2, 3]}))
    verdict = TARGETS["execution"].run(case, create_device("driver_under_test:create_litert_xnnpack_device"))
    assert (verdict.rule, verdict.locus) == ("accuracy.float32", "DEQUANTIZE")
    sighting = Sighting("ai-edge-litert", "xnnpack", case.materialized().model, verdict)
    assert matching(sighting) is DIVERGENCES["litert-xnnpack-constant-dequantize"]
    case.close()
    fed = model_from_json(_constant_dequantize_beside_a_rescaling_maximum({"lifetime": "SUBGRAPH_INPUT"})["model"])
    assert matching(Sighting("ai-edge-litert", "xnnpack", fed, _wrong("DEQUANTIZE", "accuracy.float32"))) is None


_RELUISH_OVERFLOW = 2**31 * 3 / 256  # the input scale from which the relu6 multiplier's exponent is 32


@pytest.mark.parametrize(("scale", "shown"), [(_RELUISH_OVERFLOW * 0.99999, False), (_RELUISH_OVERFLOW, True)])
def test_hard_swish_reluish_overflow_shows_and_matches_from_its_threshold_scale_on(scale: float, shown: bool) -> None:
    divergence = DIVERGENCES["litert-hard-swish-reluish-shift-overflow"]
    example = {**divergence.example, "model": {**divergence.example["model"]}}
    operands = example["model"]["operands"]
    example["model"]["operands"] = [{**operands[0], "scale": scale}, {**operands[1], "scale": scale / 2}]
    case = case_of(example)
    verdict = TARGETS["execution"].run(case, create_device("driver_under_test:create_litert_reference_device"))
    assert verdict.ok is not shown, (verdict.rule, verdict.details)
    model = case.materialized().model
    found = matching(Sighting("ai-edge-litert", "reference", model, _wrong("HARD_SWISH")))
    assert (found is divergence) is shown
    case.close()


@pytest.mark.parametrize(
    ("scale", "zero_point", "shown"),
    [
        (1.4551915228366852e-11, 128, True),  # the baseline campaign's RELU6
        (9.2e-10, 128, True),  # 128 * scale just within float32 epsilon of 0
        (9.4e-10, 128, False),  # just beyond it: the Clip stays
        (1e-10, 0, False),  # no value below 0 representable: dropping the Clip changes nothing
        (1e-3, 128, False),
    ],
)
def test_clip_quant_fusion_epsilon_matches_only_a_domain_within_epsilon_beyond_the_bound(
    scale: float, zero_point: int, shown: bool
) -> None:
    divergence = DIVERGENCES["onnxruntime-clip-quant-fusion-epsilon"]
    model_json = {**divergence.example["model"]}
    model_json["operands"] = [{**o, "scale": scale, "zeroPoint": zero_point} for o in model_json["operands"]]
    model = model_from_json(model_json)
    found = matching(Sighting("onnxruntime", "all", model, _wrong("RELU6")))
    assert (found is divergence) is shown
    assert matching(Sighting("onnxruntime", "basic", model, _wrong("RELU6"))) is None


@pytest.mark.parametrize(("input_scale", "shown"), [(2.0**22, True), (2.0**17, True), (2.0**16, False), (0.5, False)])
def test_requantize_overflow_of_a_per_channel_convolution_matches_from_its_threshold_multiplier_on(
    input_scale: float, shown: bool
) -> None:
    # The filter's channel holds one weight of 45: its accumulator reaches 45 * 255 = 11475 at most. The multiplier
    # (input scale * 2^-6 / 2^-6) is 2^e * 0.5 with e = log2(input scale) + 1; 11475 * 2^e passes 2^31 from e = 18 on.
    divergence = DIVERGENCES["litert-requantize-left-shift-overflow"]
    model_json = {**divergence.example["model"]}
    model_json["operands"] = [dict(o) for o in model_json["operands"]]
    model_json["operands"][0]["scale"] = input_scale
    model = model_from_json(model_json)
    found = matching(Sighting("ai-edge-litert", "optimized", model, _wrong("DEPTHWISE_CONV_2D")))
    assert (found is divergence) is shown


@pytest.mark.parametrize(
    ("input_dims", "aux_dims", "shown"),
    [([2, 1, 1], [2, 1, 2], True), ([0, 0, 0], [0, 0, 0], True), ([2, 1, 2], [2, 1, 2], False)],
    ids=["narrower", "left-to-the-execution", "as-wide"],
)
def test_time_major_cross_aux_rnn_matches_widths_that_differ_or_the_model_leaves_open(
    input_dims: list[int], aux_dims: list[int], shown: bool
) -> None:
    # A campaign's case gave both widths at run time only (dimensions 0 in the model); the engine read past the
    # narrower auxiliary input there.
    divergence = DIVERGENCES["litert-bidirectional-rnn-time-major-cross-aux"]
    model_json = {**divergence.example["model"]}
    model_json["operands"] = [dict(o) for o in model_json["operands"]]
    model_json["operands"][0]["dimensions"], model_json["operands"][9]["dimensions"] = input_dims, aux_dims
    model = model_from_json(model_json)
    found = matching(Sighting("ai-edge-litert", "optimized", model, _wrong("BIDIRECTIONAL_SEQUENCE_RNN")))
    assert (found is divergence) is shown


def _maximum(input_scale: float):
    """MAXIMUM of a run-time int8 input at `input_scale` and a constant 0 at 1/8, into an output at 1/16."""
    operands = [
        {"type": "TENSOR_QUANT8_ASYMM_SIGNED", "dimensions": [1, 1], "scale": input_scale, "zeroPoint": 0},
        {"type": "TENSOR_QUANT8_ASYMM_SIGNED", "dimensions": [1, 1], "scale": 0.125, "zeroPoint": 0},
        {"type": "TENSOR_QUANT8_ASYMM_SIGNED", "dimensions": [1, 1], "scale": 0.0625, "zeroPoint": 0},
    ]
    for operand, lifetime in zip(operands, ("SUBGRAPH_INPUT", "CONSTANT_COPY", "SUBGRAPH_OUTPUT")):
        operand["lifetime"] = lifetime
    operands[1]["value"] = [0]
    return model_from_json(
        {
            "operands": operands,
            "operations": [{"type": "MAXIMUM", "inputs": [0, 1], "outputs": [2]}],
            "inputIndexes": [0],
            "outputIndexes": [2],
            "relaxComputationFloat32toFloat16": False,
        }
    )


@pytest.mark.parametrize(("input_scale", "shown"), [(2.0**24, True), (2.0**20, True), (2.0**16, False)])
def test_requantize_overflow_of_a_maximum_input_matches_from_a_scale_ratio_of_2_to_the_23(
    input_scale: float, shown: bool
) -> None:
    # A campaign's case: input -117 at scale 2^24 came out 127 where max(0, -117 * 2^24) = 0. The ratio to the
    # output scale is 2^(e - 1) with 255 * 2^e passing 2^31 from e = 24 on.
    divergence = DIVERGENCES["litert-requantize-left-shift-overflow"]
    found = matching(Sighting("ai-edge-litert", "reference", _maximum(input_scale), _wrong("MAXIMUM")))
    assert (found is divergence) is shown


@pytest.mark.parametrize(
    ("activation", "largest", "shown"),
    [(2, 1.000875, True), (2, 1.0, False), (2, 1.003, False), (3, 6.0001, True), (3, 6.0, False), (3, 6.02, False)],
)
def test_duplicate_node_name_matches_a_largest_value_above_the_clip_bound_by_under_half_a_step(
    activation: int, largest: float, shown: bool
) -> None:
    # RELU1 (2) clips at 1, RELU6 (3) at 6; a campaign's case was an int8 ADD with RELU6 whose largest value is 6.0001.
    divergence = DIVERGENCES["onnxruntime-duplicate-node-name"]
    model_json = {**divergence.example["model"]}
    model_json["operands"] = [dict(o) for o in model_json["operands"]]
    model_json["operands"][2]["value"] = [activation]
    model_json["operands"][3]["scale"] = largest / 255
    failed = Verdict(Outcome.FAILURE, rule="status.expected", title="sync execution answered GENERAL_FAILURE")
    found = matching(Sighting("onnxruntime", "all", model_from_json(model_json), failed))
    assert (found is divergence) is shown


@pytest.mark.parametrize(
    ("ratio", "elements", "shown"),
    [(300.0, 16, True), (262.0, 16, True), (255.0, 16, False), (300.0, 8, True), (300.0, 7, False)],
)
def test_add_rescale_wrap_shows_and_matches_beyond_int16_in_whole_blocks_of_8(
    ratio: float, elements: int, shown: bool
) -> None:
    # Offsets 127 and -128 rescaled by `ratio`: beyond 32767 from a ratio of 256 on (262 * 127 = 33274); the
    # kernel's vectorized loop takes 8 elements at a time and computes a shorter tail right.
    divergence = DIVERGENCES["litert-add-rescale-int16-wrap"]
    example = {**divergence.example, "model": {**divergence.example["model"]}}
    operands = [{**o, "dimensions": [elements]} for o in example["model"]["operands"]]
    operands[2]["dimensions"] = []
    operands[1]["scale"] = operands[3]["scale"] * ratio
    example["model"]["operands"] = operands
    example["inputs"] = [
        {"dimensions": [elements], "value": [128] * elements},
        {"dimensions": [elements], "value": ([0, 255] * elements)[:elements]},
    ]
    case = case_of(example)
    verdict = TARGETS["execution"].run(case, create_device("driver_under_test:create_litert_device"))
    assert verdict.ok is not shown, (verdict.rule, verdict.details)
    model = case.materialized().model
    found = matching(Sighting("ai-edge-litert", "optimized", model, _wrong("ADD")))
    assert (found is divergence) is shown
    case.close()


def test_a_divergence_inside_a_while_body_matches_the_while_output() -> None:
    # A baseline campaign's case: MINIMUM of the loop value and a constant at scale 18343176 (the requantization
    # wraps) in a WHILE body; the wrong values show at the WHILE's output.
    divergence = DIVERGENCES["litert-requantize-left-shift-overflow"]
    model = model_from_json(_WHILE_MINIMUM)
    assert matching(Sighting("ai-edge-litert", "reference", model, _wrong("WHILE"))) is divergence
    assert matching(Sighting("ai-edge-litert", "reference", model, _wrong("ADD"))) is None


def _int32_constant(value: int) -> dict:
    """An INT32 scalar CONSTANT_COPY operand of the model JSON."""
    return {
        "type": "INT32",
        "dimensions": [],
        "scale": 0.0,
        "zeroPoint": 0,
        "lifetime": "CONSTANT_COPY",
        "value": [value],
    }


_Q8 = {"type": "TENSOR_QUANT8_ASYMM", "dimensions": [2, 4, 2], "scale": 0.09095876663923264, "zeroPoint": 128}
_I32 = {"type": "TENSOR_INT32", "dimensions": [1], "scale": 0.0, "zeroPoint": 0}
_WHILE_MINIMUM = {
    "operands": [
        {"type": "SUBGRAPH", "dimensions": [], "lifetime": "SUBGRAPH", "location": {"offset": 0}},
        {"type": "SUBGRAPH", "dimensions": [], "lifetime": "SUBGRAPH", "location": {"offset": 1}},
        {**_Q8, "lifetime": "SUBGRAPH_INPUT"},
        {**_I32, "lifetime": "CONSTANT_COPY", "value": [1]},
        {**_I32, "lifetime": "SUBGRAPH_INPUT"},
        {**_Q8, "lifetime": "SUBGRAPH_OUTPUT"},
    ],
    "operations": [{"type": "WHILE", "inputs": [0, 1, 2, 3, 4], "outputs": [5]}],
    "inputIndexes": [2, 4],
    "outputIndexes": [5],
    "relaxComputationFloat32toFloat16": False,
    "referenced": [
        {
            "operands": [
                {**_Q8, "lifetime": "SUBGRAPH_INPUT"},
                {**_I32, "lifetime": "SUBGRAPH_INPUT"},
                {**_I32, "lifetime": "SUBGRAPH_INPUT"},
                {
                    "type": "TENSOR_BOOL8",
                    "dimensions": [1],
                    "scale": 0.0,
                    "zeroPoint": 0,
                    "lifetime": "SUBGRAPH_OUTPUT",
                },
            ],
            "operations": [{"type": "LESS", "inputs": [1, 2], "outputs": [3]}],
            "inputIndexes": [0, 1, 2],
            "outputIndexes": [3],
        },
        {
            "operands": [
                {**_Q8, "lifetime": "SUBGRAPH_INPUT"},
                {**_I32, "lifetime": "SUBGRAPH_INPUT"},
                {**_I32, "lifetime": "SUBGRAPH_INPUT"},
                {**_Q8, "scale": 18343176.0, "lifetime": "CONSTANT_COPY", "value": [201] + [0] * 15},
                {**_Q8, "lifetime": "SUBGRAPH_OUTPUT"},
                {**_I32, "lifetime": "CONSTANT_COPY", "value": [1]},
                _int32_constant(0),
                {**_I32, "lifetime": "SUBGRAPH_OUTPUT"},
            ],
            "operations": [
                {"type": "MINIMUM", "inputs": [0, 3], "outputs": [4]},
                {"type": "ADD", "inputs": [1, 5, 6], "outputs": [7]},
            ],
            "inputIndexes": [0, 1, 2],
            "outputIndexes": [4, 7],
        },
    ],
}


def _requantized_example(kind: str, ratio: float) -> dict:
    """A CONCATENATION of one int8 input, or a SELECT of it against zeros, whose input scale is `ratio` times the
    output's (1/8): 44 and -3 saturate to 127 and -128."""
    qs = {"type": "TENSOR_QUANT8_ASYMM_SIGNED", "dimensions": [2], "zeroPoint": 0}
    source, out = {**qs, "scale": 0.125 * ratio, "lifetime": "SUBGRAPH_INPUT"}, {**qs, "scale": 0.125}
    values = {"dimensions": [2], "value": [44, -3]}
    if kind == "CONCATENATION":
        operands = [source, _int32_constant(0), {**out, "lifetime": "SUBGRAPH_OUTPUT"}]
        inputs, operation = [values], {"type": kind, "inputs": [0, 1], "outputs": [2]}
        indexes = [0]
    else:
        condition = {"type": "TENSOR_BOOL8", "dimensions": [2], "scale": 0.0, "zeroPoint": 0}
        operands = [
            {**condition, "lifetime": "SUBGRAPH_INPUT"},
            source,
            {**out, "lifetime": "SUBGRAPH_INPUT"},
            {**out, "lifetime": "SUBGRAPH_OUTPUT"},
        ]
        inputs = [{"dimensions": [2], "value": [True, True]}, values, {"dimensions": [2], "value": [0, 0]}]
        operation, indexes = {"type": kind, "inputs": [0, 1, 2], "outputs": [3]}, [0, 1, 2]
    model = {
        "operands": operands,
        "operations": [operation],
        "inputIndexes": indexes,
        "outputIndexes": [len(operands) - 1],
        "relaxComputationFloat32toFloat16": False,
    }
    return {"model": model, "inputs": inputs}


@pytest.mark.parametrize("kind", ["CONCATENATION", "SELECT"])
@pytest.mark.parametrize(("ratio", "shown"), [(2.0**25, True), (2.0**22, False)])
def test_requantize_overflow_of_a_concatenated_or_selected_input_shows_and_matches(
    kind: str, ratio: float, shown: bool
) -> None:
    # A baseline campaign's case: CONCATENATION of 44 at scale 1/8 into scale 2^-28 gave -128 where 127 is due;
    # the translation brings SELECT's inputs to the output's scale with the same QUANTIZE.
    divergence = DIVERGENCES["litert-requantize-left-shift-overflow"]
    case = case_of(_requantized_example(kind, ratio))
    verdict = TARGETS["execution"].run(case, create_device("driver_under_test:create_litert_reference_device"))
    assert verdict.ok is not shown, (verdict.rule, verdict.details)
    model = case.materialized().model
    assert (matching(Sighting("ai-edge-litert", "reference", model, _wrong(kind))) is divergence) is shown
    case.close()


@pytest.mark.parametrize(("zero_point", "shown"), [(0, True), (1, False)])
def test_duplicate_node_name_matches_a_relu_fused_in_a_while_body_whose_outputs_start_at_0(
    zero_point: int, shown: bool
) -> None:
    # A campaign's case: MUL with RELU fused in a WHILE body, uint8 with zero point 0 (no value below 0 to clip);
    # the same MUL in main runs, and with zero point 1 (a value below 0 exists) it runs in the body too.
    divergence = DIVERGENCES["onnxruntime-duplicate-node-name"]
    model_json = {**_WHILE_MINIMUM, "referenced": [dict(g) for g in _WHILE_MINIMUM["referenced"]]}
    body = model_json["referenced"][1]
    operands = [dict(o) for o in body["operands"]] + [_int32_constant(1)]  # RELU
    operands[0]["zeroPoint"] = operands[4]["zeroPoint"] = zero_point
    body["operands"] = operands
    body["operations"] = [{"type": "MUL", "inputs": [0, 0, 8], "outputs": [4]}, body["operations"][1]]
    failed = Verdict(Outcome.FAILURE, rule="status.expected", title="sync execution answered GENERAL_FAILURE")
    found = matching(Sighting("onnxruntime", "all", model_from_json(model_json), failed))
    assert (found is divergence) is shown
