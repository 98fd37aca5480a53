"""Per-operation recipes: how to draw an operation's operands beyond what the catalogue's hints say.

A recipe receives an OpDraw whose signature is already chosen and sets the positions whose shapes or values are
related (broadcast partners, filters and biases, divisibility rules...). Positions it leaves unset are filled
from the catalogue's hints by OpDraw.finish. Importing this package registers every recipe; the model generator
reads them through `recipe_for` (`generic` for an operation without a recipe of its own), `RECIPES` and
`FREE_QUANT`.

The recipes are a part of model building (a sub-package of harness.gen.model): they draw with its OpDraw, and its
generator calls them.
"""

from harness.gen.model.recipes import _detection, _general, _layers, _recurrent
from harness.gen.model.recipes._registry import FREE_QUANT, RECIPES, recipe_for

__all__ = ["FREE_QUANT", "RECIPES", "recipe_for"]

# The modules above register their recipes on import.
del _detection, _general, _layers, _recurrent
