"""Sub-commands of the ``easl`` CLI; each module exposes ``register(subparsers)``."""
