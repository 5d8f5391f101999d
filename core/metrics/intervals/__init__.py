"""Stage 3 of :func:`core.metrics.pipeline.evaluate`, the analytic intervals: Fisher z and Wald intervals, Gwet's
linearised standard errors of the chance-corrected coefficients, the kappa test and the benchmark scales."""
