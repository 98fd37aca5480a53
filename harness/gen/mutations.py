"""Invalid-input mutations: for every rule of the V catalogue, mutators that break exactly that rule.

Each `Mutation` is labelled with the V rule it breaks and turns a valid subject into one the oracle's reference
validator must reject:

- "model": apply(model, source) -> a new Model (V1-V20, V23-V25);
- "preparation": apply(source) -> (execution preference, priority) (V21, V22);
- "request": apply(model, request, source) -> a new Request for the same, valid model (V30-V36);
- "fenced_request": the same, for a request that is valid on the fenced path only as long as every output is
  fully specified (V37). Request mutations are invalid on the fenced path as well.

Mutations never modify their arguments. The variable parts (which operand, which value) come from the Source; a
subject that offers no place for a mutation makes it raise GenerationRejected, and `apply_random` then tries
another one.
"""

from harness.gen import _mutate_graph, _mutate_operands, _mutate_preparation, _mutate_request, _mutate_subgraphs
from harness.gen._mutate_registry import (
    KINDS,
    MUTATIONS,
    Kind,
    Mutation,
    apply_mutation,
    apply_random,
    mutation,
    mutations_for,
    register,
)

__all__ = [
    "KINDS",
    "MUTATIONS",
    "Kind",
    "Mutation",
    "apply_mutation",
    "apply_random",
    "mutation",
    "mutations_for",
    "register",
]

# The modules above register their mutations on import.
del _mutate_graph, _mutate_operands, _mutate_preparation, _mutate_request, _mutate_subgraphs
