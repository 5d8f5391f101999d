"""Evaluation of data larger than memory and simulation sweeps on a Dask cluster (the ``dask`` extra).

Every metric of ``easl evaluate`` is ``finish(totals)`` of sums over responses (:mod:`core.metrics.estimates.sums`);
here each partition of the data computes those totals with the in-memory code (:mod:`core.distributed.partitions`),
the totals are merged exactly (moments are re-centred with Chan, Golub & LeVeque's update, counts and tables are
added) and the in-memory finishers turn the merged totals into the same figures
(:mod:`core.distributed.finish`). :mod:`core.distributed.evaluate` reads partitioned Parquet or CSV with
``dask.dataframe`` and runs the partitions on a cluster (:mod:`core.distributed.cluster`);
:mod:`core.distributed.runs` distributes independent simulation runs. Nothing here is imported by the
single-process path, so ``dask`` stays optional.
"""
