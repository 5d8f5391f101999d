"""A method against DA at every budget of an annotator-aware study: the paired difference in Spearman and Kendall
over seeds, with a 95% interval.

The methods of a seed share its annotators and scores (common random numbers,
:func:`core.simulate.aware_study.run_study`), so the comparison is paired by seed. For annotator model ``M``,
budget ``b`` (scores per item) and measure ``r`` (Spearman or Kendall with the truth), seed ``s`` gives

    d_s = r(method, M, s, b) - r(reference, M, s, b),

and the table reports ``mean(d)``, its standard error ``sd(d) / sqrt(S)`` and the t interval
``mean(d) +- t_{S-1, 0.975} sd(d) / sqrt(S)`` over the ``S`` seeds. "Worse beyond the seed noise" is an interval
entirely below 0; "better beyond the seed noise" one entirely above 0. The condition for the default method
(``docs/studies/default-method.md``): ``aware`` becomes the default if and only if no annotator model has a
budget of at least 3 scores per item where it is worse.

Run on a finished study's output directory (its ``tables/curves.csv``)::

    python -m core.simulate.paired_budgets OUT_DIR[,OUT_DIR...] ...

(directories joined by commas are studies of different seeds, pooled) writes ``tables/vs_da_per_budget.csv`` and
prints the worst budget of each model and the verdict; :func:`report_section` adds the same to a study's report.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from easl_toolkit.core.errors import EaslError
from easl_toolkit.core.simulate.report import Report

#: Budgets (scores per item) from which the default method must never lose to DA.
MIN_PER_ITEM = 3.0
MEASURES = ("spearman", "kendall")
TABLE_NAME = "vs_da_per_budget"


def paired_by_budget(
    curves: pd.DataFrame,
    *,
    method: str = "aware",
    reference: str = "da",
) -> pd.DataFrame:
    """The paired difference ``method - reference`` per annotator model, budget (from :data:`MIN_PER_ITEM` scores
    per item) and measure (:data:`MEASURES`), over seeds.

    Parameters
    ----------
    curves : pandas.DataFrame
        The study's per-batch rows (``tables/curves.csv``): columns ``model``, ``method``, ``seed``, ``per_item``
        and each of :data:`MEASURES`.
    method, reference : str
        The method judged and the one it is judged against.

    Returns
    -------
    pandas.DataFrame
        A row per (model, per_item, measure), in the study's model order: ``seeds`` (pairs ``S``), ``method``,
        ``reference`` (seed means), ``difference`` (mean of ``d_s``), ``se`` (``sd(d) / sqrt(S)``), ``ci_low``,
        ``ci_high`` (``difference -+ t_{S-1, 0.975} se``), ``verdict`` ("worse" when ``ci_high < 0``, "better"
        when ``ci_low > 0``, else "within noise").
    """
    _check(curves, (method, reference))
    rows = curves[curves["per_item"] >= MIN_PER_ITEM - 1e-9]
    if rows.empty:
        raise EaslError(f"The study has no budget of {MIN_PER_ITEM:g} scores per item or more.")
    keys = ["model", "per_item", "seed"]
    cols = keys + list(MEASURES)
    both = rows.loc[rows["method"] == method, cols].merge(
        rows.loc[rows["method"] == reference, cols], on=keys, suffixes=("", "_ref"), how="inner"
    )
    long = pd.concat(
        [
            both[["model", "per_item"]].assign(
                measure=m, method=both[m].to_numpy(), reference=both[f"{m}_ref"].to_numpy()
            )
            for m in MEASURES
        ],
        ignore_index=True,
    )
    long["d"] = long["method"] - long["reference"]
    order = {m: k for k, m in enumerate(dict.fromkeys(curves["model"]))}
    g = long.groupby(["model", "per_item", "measure"], sort=False)
    out = g.agg(
        seeds=("d", "size"), method=("method", "mean"), reference=("reference", "mean"), difference=("d", "mean")
    ).reset_index()
    sd = g["d"].std(ddof=1).to_numpy()
    n = out["seeds"].to_numpy(dtype=np.float64)
    out["se"] = sd / np.sqrt(n)
    half = stats.t.ppf(0.975, np.maximum(n - 1, 1)) * out["se"].to_numpy()
    out["ci_low"], out["ci_high"] = out["difference"] - half, out["difference"] + half
    out["verdict"] = np.where(out["ci_high"] < 0, "worse", np.where(out["ci_low"] > 0, "better", "within noise"))
    out = out.rename(columns={"method": method, "reference": reference})
    rank = {"model": order, "measure": {m: k for k, m in enumerate(MEASURES)}}
    out = out.sort_values(["model", "measure", "per_item"], key=lambda c: c.map(rank[c.name]) if c.name in rank else c)
    return out.reset_index(drop=True)


def _check(curves: pd.DataFrame, methods: tuple[str, str]) -> None:
    """The study's curves have the columns, both methods, and each (model, method, seed, budget) once."""
    need = {"model", "method", "seed", "per_item", *MEASURES}
    missing = sorted(need - set(curves.columns))
    if missing:
        raise EaslError(f"The study's curves have no column {missing[0]!r} (expected {', '.join(sorted(need))}).")
    for name in methods:
        if name not in set(curves["method"]):
            raise EaslError(
                f"The study has no runs of the method {name!r} (it has {', '.join(curves['method'].unique())})."
            )
    dup = curves.duplicated(["model", "method", "seed", "per_item"])
    if dup.any():
        first = curves[dup].iloc[0]
        raise EaslError(
            f"The study's curves hold seed {first['seed']} of {first['method']} under {first['model']} twice "
            "(pool only studies of different seeds)."
        )


def worst_per_model(table: pd.DataFrame) -> pd.DataFrame:
    """For each model and measure the budget of :func:`paired_by_budget` with the lowest upper interval bound (the
    closest to "worse beyond the seed noise"), and how many budgets are worse / better."""
    ix = table.groupby(["model", "measure"], sort=False)["ci_high"].idxmin()
    worst = table.loc[ix.to_numpy()].reset_index(drop=True)
    counts = (
        table.assign(worse=table["verdict"] == "worse", better=table["verdict"] == "better")
        .groupby(["model", "measure"], sort=False)[["worse", "better"]]
        .sum()
        .reset_index()
        .rename(columns={"worse": "budgets_worse", "better": "budgets_better"})
    )
    return worst.merge(counts, on=["model", "measure"])


def never_worse(table: pd.DataFrame) -> bool:
    """The condition for the default method (module docstring): no row of :func:`paired_by_budget` is "worse"."""
    return not bool((table["verdict"] == "worse").any())


def report_section(rep: Report, curves: pd.DataFrame, *, method: str = "aware", reference: str = "da") -> bool:
    """Add the per-budget comparison to a study's :class:`~core.simulate.report.Report`: a heading, the verdict,
    the worst budget of each model and measure, and the full table as ``tables/vs_da_per_budget.csv``. Returns
    :func:`never_worse`."""
    table = paired_by_budget(curves, method=method, reference=reference)
    rep.heading(f"{method} vs {reference} per budget (from {MIN_PER_ITEM:g} scores per item)")
    if table.empty:  # e.g. item counts whose batches put the methods' budgets on different grids
        rep.paragraph(f"No budget of {MIN_PER_ITEM:g} scores per item or more was run by both methods: no verdict.")
        return False
    verdict = never_worse(table)
    worse = table[table["verdict"] == "worse"]
    rep.paragraph(
        f"Paired difference {method} - {reference} in Spearman and Kendall over {int(table['seeds'].min())} seeds, "
        "95% t interval; 'worse' when the interval lies entirely below 0. "
        + (
            f"{method} is never worse than {reference} beyond the seed noise."
            if verdict
            else "Worse beyond the seed noise: "
            + "; ".join(f"{r.model} {r.measure} at {r.per_item:g} per item" for r in worse.itertuples())
            + "."
        )
    )
    rep.table(table, TABLE_NAME, show=False)
    rep.table(
        worst_per_model(table),
        f"{TABLE_NAME}_worst",
        caption=f"Per model and measure, the budget whose interval of {method} - {reference} has the lowest upper "
        "end, and how many budgets are worse / better beyond the seed noise",
        digits=4,
    )
    return verdict


def load_curves(dirs: list[str]) -> pd.DataFrame:
    """The ``tables/curves.csv`` of one or more study output directories (of different seeds), pooled."""
    frames = []
    for d in dirs:
        path = Path(d) / "tables" / "curves.csv"
        if not path.is_file():
            raise EaslError(f"{path}: no such file (an annotator-aware study writes it into its output directory).")
        frames.append(pd.read_csv(path))
    return pd.concat(frames, ignore_index=True)


def _fmt(row: Any) -> str:
    return f"{row.difference:+.4f} [{row.ci_low:+.4f}, {row.ci_high:+.4f}]"


def main(argv: list[str] | None = None) -> int:
    """Check each study in ``argv`` (an output directory, or several of different seeds joined by commas, pooled);
    writes ``tables/vs_da_per_budget.csv`` into the first directory of each; exit status 1 when ``aware`` is worse
    than DA beyond the seed noise anywhere."""
    studies = sys.argv[1:] if argv is None else argv
    if not studies:
        print("usage: python -m core.simulate.paired_budgets OUT_DIR[,OUT_DIR...] ...", file=sys.stderr)
        return 2
    ok = True
    for study in studies:
        dirs = [d for d in study.split(",") if d]
        table = paired_by_budget(load_curves(dirs))
        table.to_csv(Path(dirs[0]) / "tables" / f"{TABLE_NAME}.csv", index=False)
        print(
            f"{study}: aware - DA, {int(table['seeds'].min())} paired seeds, "
            f"budgets {MIN_PER_ITEM:g}..{table['per_item'].max():g} per item"
        )
        for row in worst_per_model(table).itertuples():
            print(
                f"  {row.model:6s} {row.measure:8s} worst at {row.per_item:5.1f}/item: {_fmt(row)}"
                f"  (budgets worse {row.budgets_worse}, better {row.budgets_better})"
            )
        for row in table[table["verdict"] == "worse"].itertuples():
            print(f"  WORSE: {row.model} {row.measure} at {row.per_item:g}/item: {_fmt(row)}")
        verdict = never_worse(table)
        ok &= verdict
        print(f"  never worse beyond the seed noise: {'yes' if verdict else 'no'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
