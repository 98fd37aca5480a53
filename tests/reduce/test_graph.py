"""The editable graph: edits, then compaction drops what nothing needs, renumbers and sets lifetimes from roles."""

from __future__ import annotations

import numpy as np

from harness.reduce._graph import Graph


def _operand(lifetime: str, dims: list[int] | None = None, **extra: object) -> dict:
    return {"type": "TENSOR_FLOAT32", "dimensions": dims or [2], "scale": 0.0, "zeroPoint": 0, "lifetime": lifetime,
            **extra}  # fmt: skip


def _model() -> dict:
    """in0 -> A -> t1 -> B -> out2;  in3 -> C -> t4 (read by nothing);  5: a constant nothing reads."""
    return {
        "operands": [
            _operand("SUBGRAPH_INPUT"),
            _operand("TEMPORARY_VARIABLE", numberOfConsumers=1),
            _operand("SUBGRAPH_OUTPUT"),
            _operand("SUBGRAPH_INPUT"),
            _operand("TEMPORARY_VARIABLE"),
            _operand("CONSTANT_COPY", value=[1.0, 2.0]),
        ],
        "operations": [
            {"type": "RELU", "inputs": [0], "outputs": [1]},
            {"type": "ABS", "inputs": [1], "outputs": [2]},
            {"type": "NEG", "inputs": [3], "outputs": [4]},
        ],
        "inputIndexes": [0, 3],
        "outputIndexes": [2],
    }


VALUES = {0: np.array([1.0, -1.0], np.float32), 3: np.array([2.0, 3.0], np.float32)}


def test_compaction_drops_dead_operations_unread_inputs_and_unused_operands() -> None:
    graph = Graph(_model(), VALUES).compact()
    assert [op["type"] for op in graph.operations] == ["RELU", "ABS"]
    assert graph.inputs == [0] and graph.outputs == [2] and graph.origin == [0, 1, 2]
    assert list(graph.values) == [0]
    assert "numberOfConsumers" not in graph.operands[1]
    assert graph.to_json()["inputIndexes"] == [0] and graph.to_json()["outputIndexes"] == [2]


def test_a_result_made_a_model_input_cuts_what_only_fed_it_and_renumbers() -> None:
    graph = Graph(_model(), VALUES)
    value = np.array([5.0, 6.0], np.float32)
    graph.to_input(1, value)
    graph.remove([0])
    graph.compact()
    # Operand 1 (now an input) is operand 0; the old input 0 fed only the removed RELU and is gone.
    assert graph.origin == [1, 2]
    assert [op["inputs"] for op in graph.operations] == [[0]]
    assert graph.inputs == [0] and graph.operands[0]["lifetime"] == "SUBGRAPH_INPUT"
    assert graph.values[0] is value


def test_a_result_made_a_constant_carries_its_value_and_shape() -> None:
    graph = Graph(_model(), VALUES)
    graph.to_constant(1, np.array([[5.0], [6.0]], np.float32))
    graph.remove([0])
    graph.compact()
    constant = graph.operands[0]
    assert constant["lifetime"] == "CONSTANT_COPY" and constant["value"] == [5.0, 6.0]
    assert constant["dimensions"] == [2, 1] and graph.inputs == []


def test_an_output_whose_writer_is_removed_is_dropped_and_an_exposed_result_becomes_an_output() -> None:
    graph = Graph(_model(), VALUES)
    graph.remove(graph.downstream([1]))  # B reads t1
    graph.to_output(1)
    graph.compact()
    assert [op["type"] for op in graph.operations] == ["RELU"]
    assert graph.outputs == [1] and graph.operands[1]["lifetime"] == "SUBGRAPH_OUTPUT"


def test_referenced_subgraphs_no_longer_reached_are_dropped_and_references_renumbered() -> None:
    model = _model()
    subgraph = {"operands": [], "operations": [], "inputIndexes": [], "outputIndexes": []}
    nested = {**subgraph, "operands": [{"type": "SUBGRAPH", "lifetime": "SUBGRAPH", "location": {"offset": 2}}]}
    model["referenced"] = [subgraph, nested, subgraph]
    model["operands"].append({"type": "SUBGRAPH", "dimensions": [], "lifetime": "SUBGRAPH", "location": {"offset": 1}})
    model["operations"][1]["inputs"].append(6)
    graph = Graph(model, VALUES).compact()
    # main reaches 1, which reaches 2; 0 is unreached: 1 and 2 become 0 and 1.
    assert len(graph.model["referenced"]) == 2
    assert graph.operands[-1]["location"] == {"offset": 0}
    assert graph.model["referenced"][0]["operands"][0]["location"] == {"offset": 1}
    graph.remove([1])
    graph.to_output(1)
    assert "referenced" not in graph.compact().model
