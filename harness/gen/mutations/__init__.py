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

Inside: the registry (_registry), what the mutations share (_common), and the mutations of a subgraph's structure
(_graph), of one operand (_operands), of parameter values (_parameters), of quantized biases (_biases), of the
quantizations the HAL fixes (_fixed_quantization) or ties to an input's (_kept_quantization), of the preparation
arguments (_preparation), of requests (_requests) and of the references between subgraphs (_subgraphs).
"""

from harness.gen.mutations import (
    _biases,
    _fixed_quantization,
    _graph,
    _kept_quantization,
    _operands,
    _parameters,
    _preparation,
    _requests,
    _subgraphs,
)
from harness.gen.mutations._registry import (
    KINDS,
    MUTATIONS,
    Kind,
    Mutation,
    apply_mutation,
    apply_random,
    mutations_for,
    operation_mutations,
)

__all__ = [
    "KINDS",
    "MUTATIONS",
    "Kind",
    "Mutation",
    "apply_mutation",
    "apply_random",
    "mutations_for",
    "operation_mutations",
]

# The modules above register their mutations on import, in this order (the order of mutations_for).
del _biases, _graph, _operands, _parameters, _preparation, _requests, _subgraphs
