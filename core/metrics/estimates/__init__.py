"""Stage 2 of :func:`core.metrics.pipeline.evaluate`, the point estimates: every metric's formula under its
paper's name (one public function per metric, validated at the door by :mod:`core.metrics.data`), the sufficient
statistics they share (:mod:`~core.metrics.estimates.sums`, :mod:`~core.metrics.estimates.moments`,
:mod:`~core.metrics.estimates.agreement_totals`) and the comparisons one evaluation makes
(:mod:`~core.metrics.estimates.pair`, :mod:`~core.metrics.estimates.comparisons`).
"""
