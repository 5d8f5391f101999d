"""The last stage of ``easl evaluate``: the files of ``--output DIR`` (:mod:`~core.metrics.write.output`: CSV
tables, ``evaluation.json``, ``report.md``) and the figures (:mod:`~core.metrics.write.plots`).
"""
