"""Evaluation of data larger than memory and simulation sweeps on a Dask cluster (the ``dask`` extra).

Each partition computes the totals of every metric's ``finish(totals)`` with the in-memory code, the totals are
merged exactly (:mod:`~core.distributed.partitions`) and finished by the in-memory finishers
(:mod:`~core.distributed.finish`); :mod:`~core.distributed.evaluate` reads partitioned Parquet or CSV,
:mod:`~core.distributed.cluster` connects and runs simulations. The single-process path imports nothing here.
"""
