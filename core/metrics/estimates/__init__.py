"""Stage 2 of :func:`core.metrics.pipeline.evaluate`, the point estimates: every metric's formula under its
paper's name, the sufficient statistics they share and the comparisons one evaluation makes."""
