"""Model building: random valid models from the operation catalogue, drawn from a Source.

`generate_model(source, config)` gives a GeneratedModel (its case-format JSON, the hal.Model and one value per
input); ModelConfig holds the knobs, `default_operations` the operations drawn from by default.

Inside: the generation state (_graph), operand values and parameters (_values, _params), drawing one operation
against a catalogue signature (_operation, with the per-operation recipes of the `recipes` sub-package), IF and
WHILE (_control_flow), turning the result into JSON and a hal.Model (_assemble) and the generator (_generate).
"""

from harness.gen.model._config import ModelConfig
from harness.gen.model._generate import GeneratedModel, default_operations, generate_model

__all__ = ["GeneratedModel", "ModelConfig", "default_operations", "generate_model"]
