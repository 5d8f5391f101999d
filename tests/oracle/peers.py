"""Reference numbers from the peer packages (RSMTool 12, irrCAC, krippendorff), run inside their own venv.

Usage: ``python peers.py DATA.npz OUT.json [--time]`` or ``python peers.py --krippendorff-big UNITS GIB``. DATA holds
``human`` (n x R, NaN missing), ``system`` (n,),
``cats`` (the scale's categories) and ``groups`` (n,) strings. With ``--time`` only the timings of the
benchmarked peer calls are written (see bench/bench_metrics.py).
"""

import json
import sys
import time
import warnings

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")


def rsmtool_numbers(h, m, cats, groups):
    from rsmtool.analyzer import Analyzer
    from rsmtool.fairness_utils import get_fairness_analyses
    from rsmtool.utils.metrics import difference_of_standardized_means
    from rsmtool.utils.prmse import mse_true, prmse_true, true_score_variance, variance_of_errors

    h1 = pd.Series(h[:, 0])
    mr = pd.Series(np.clip(np.round(m), cats[0], cats[-1]))
    raw = Analyzer.metrics_helper(h1, pd.Series(m))
    rounded = Analyzer.metrics_helper(h1, mr)
    both = np.isfinite(h[:, 1])
    hh = Analyzer.metrics_helper(pd.Series(h[both, 0]), pd.Series(h[both, 1]), smd_method="pooled")
    out = {
        "sys": {
            "N": raw["N"],
            "h_mean": raw["h_mean"],
            "h_sd": raw["h_sd"],
            "sys_mean": raw["sys_mean"],
            "sys_sd": raw["sys_sd"],
            "corr": raw["corr"],
            "qwk": raw["wtkappa"],
            "smd": raw["SMD"],
            "rmse": raw["RMSE"],
            "r2": raw["R2"],
            "kappa": rounded["kappa"],
            "exact_agr": rounded["exact_agr"],
            "adj_agr": rounded["adj_agr"],
        },
        "hh": {
            "N": hh["N"],
            "corr": hh["corr"],
            "qwk": hh["wtkappa"],
            "smd": hh["SMD"],
            "kappa": hh["kappa"],
            "exact_agr": hh["exact_agr"],
            "adj_agr": hh["adj_agr"],
            "rmse": hh["RMSE"],
            "r2": hh["R2"],
        },
        "true": {
            "rater_error_variance": variance_of_errors(pd.DataFrame(h)),
            "true_score_variance": true_score_variance(pd.DataFrame(h)),
            "mse_true": mse_true(pd.Series(m), pd.DataFrame(h)),
            "prmse": prmse_true(pd.Series(m), pd.DataFrame(h)),
        },
    }
    sel = groups == groups[0]
    out["dsm"] = difference_of_standardized_means(
        h[sel, 0], m[sel], h[:, 0].mean(), m.mean(), h[:, 0].std(ddof=1), m.std(ddof=1)
    )
    df = pd.DataFrame({"sc1": h[:, 0], "raw": m, "L1": groups, "spkitemid": np.arange(h.shape[0]).astype(str)})
    _, cont = get_fairness_analyses(df, "L1", "raw")
    fm = cont["fairness_metrics_by_L1"]
    out["fairness"] = {
        key: {"value": float(fm.loc["R2", col]), "p_value": float(fm.loc["sig", col])}
        for key, col in (
            ("osa", "Overall score accuracy"),
            ("osd", "Overall score difference"),
            ("csd", "Conditional score difference"),
        )
    }
    out["fairness_estimates"] = {
        key: cont[f"estimates_{key}_by_L1"]["estimate"].to_dict() for key in ("osa", "osd", "csd")
    }
    return out


def irrcac_numbers(ratings, cats):
    from irrCAC.raw import CAC

    df = pd.DataFrame(ratings)
    out = {}
    for w in ("identity", "linear", "quadratic"):
        cac = CAC(df, weights=w, categories=[float(c) for c in cats], digits=10)
        out[w] = {}
        for name in ("gwet", "bp", "fleiss", "conger", "krippendorff"):
            est = getattr(cac, name)()["est"]
            out[w][name] = {"value": est["coefficient_value"], "se": est["se"], "pa": est["pa"], "pe": est["pe"]}
    return out


def krippendorff_numbers(ratings, cats):
    import krippendorff

    data = ratings.T
    return {
        level: krippendorff.alpha(
            reliability_data=data, level_of_measurement=level, value_domain=[float(c) for c in cats]
        )
        for level in ("nominal", "ordinal", "interval", "ratio")
    }


def to_builtin(x):
    if isinstance(x, dict):
        return {str(k): to_builtin(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_builtin(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return None if not np.isfinite(x) else float(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    return x


def timings(h, m, cats):
    """Seconds for the peer calls the benchmark compares (first call, so imports are done before timing)."""
    from irrCAC.raw import CAC
    from rsmtool.analyzer import Analyzer
    from rsmtool.utils.prmse import prmse_true

    out = {}
    h1, h2, ms = pd.Series(h[:, 0]), pd.Series(h[:, 1]), pd.Series(m)
    t = time.perf_counter()
    Analyzer.metrics_helper(h1, ms)
    Analyzer.metrics_helper(h1, pd.Series(np.clip(np.round(m), cats[0], cats[-1])))
    Analyzer.metrics_helper(h1, h2, smd_method="pooled")
    prmse_true(ms, pd.DataFrame(h))
    out["rsmtool_metrics_helper_x3_plus_prmse"] = time.perf_counter() - t
    t = time.perf_counter()
    CAC(pd.DataFrame(h[:, :2]), weights="quadratic", categories=[float(c) for c in cats], digits=10).gwet()
    out["irrcac_gwet_ac2"] = time.perf_counter() - t
    import krippendorff

    cont = np.random.default_rng(0).normal(size=(2, 200))
    t = time.perf_counter()
    krippendorff.alpha(reliability_data=cont, level_of_measurement="interval")
    out["krippendorff_interval_200_continuous_units"] = time.perf_counter() - t
    return out


def krippendorff_big(units: int, limit_gib: float):
    """Try the krippendorff package on ``units`` continuous units x 2 coders under an address-space limit."""
    import resource

    import krippendorff

    limit = int(limit_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    cont = np.random.default_rng(0).normal(size=(2, units))
    t = time.perf_counter()
    try:
        value = krippendorff.alpha(reliability_data=cont, level_of_measurement="interval")
        return {"ok": True, "seconds": time.perf_counter() - t, "alpha": float(value)}
    except MemoryError as exc:
        return {"ok": False, "seconds": time.perf_counter() - t, "error": f"MemoryError: {exc}"[:300]}


def main():
    if sys.argv[1] == "--krippendorff-big":
        result = krippendorff_big(int(sys.argv[2]), float(sys.argv[3]))
        print(json.dumps(result))
        return
    data = np.load(sys.argv[1], allow_pickle=True)
    h, m, cats = data["human"], data["system"], data["cats"]
    if "--time" in sys.argv:
        result = timings(h, m, cats)
    else:
        groups = data["groups"].astype(str)
        pair = np.column_stack([h[:, 0], np.clip(np.round(m), cats[0], cats[-1])])
        result = {
            "rsmtool": rsmtool_numbers(h, m, cats, groups),
            "irrcac_pair": irrcac_numbers(pair, cats),
            "irrcac_multi": irrcac_numbers(h, cats),
            "kripp_pair": krippendorff_numbers(pair, cats),
            "kripp_multi": krippendorff_numbers(h, cats),
        }
    with open(sys.argv[2], "w") as f:
        json.dump(to_builtin(result), f)


if __name__ == "__main__":
    main()
