"""easl-toolkit's engine: stores, models, metrics and simulations, below every front end.

``__version__`` is the one source of the version: ``pyproject.toml`` reads it (``[tool.setuptools.dynamic]``),
``easl --version`` prints it, and ``CHANGELOG.md`` has one section per released version.
"""

__version__ = "0.2.0"
