"""Stage 3 of :func:`core.metrics.pipeline.evaluate`, the analytic intervals: Fisher z and Wald intervals
(:mod:`~core.metrics.intervals.analytic`), Gwet's linearised standard errors of the chance-corrected coefficients
(:mod:`~core.metrics.intervals.linearisation`, :mod:`~core.metrics.intervals.agreement_variance`), the kappa test
(:mod:`~core.metrics.intervals.kappa_test`) and the benchmark scales read with them
(:mod:`~core.metrics.intervals.benchmark`). Resampling intervals are :mod:`core.metrics.bootstrap`.
"""
