"""The seed papers' experiments and the real-rating replays behind ``easl simulate`` and ``easl demo``
(``docs/ARCHITECTURE.md``, "core/simulate/").
"""
