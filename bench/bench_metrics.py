"""Benchmark of the evaluation library (its speed targets), side by side with the peers.

Run with ``make bench`` or ``.venv/bin/python bench/bench_metrics.py [--quick] [--no-peers]``.

* The whole suite (every metric of ``easl evaluate``: observed, rank, chance-corrected, true-score, human-human,
  degradation; two human columns, one system, no bootstrap) on 1,000,000 responses: target <= 5 s; and the same
  on 1,000,000 responses x 4 raters with 20% of the ratings missing (all-raters coefficients included).
* RSMTool's metrics and PRMSE functions (``Analyzer.metrics_helper`` three times plus ``prmse_true``) against
  our equivalent (``observed_metrics`` three times plus ``prmse``): target >= 20x faster.
* Gwet's AC2 (quadratic) on 1,000,000 x 2 ratings against irrCAC: target >= 50x faster.
* Krippendorff's interval alpha on 1,000,000 x 2 continuous ratings: target <= 1 s with O(N) memory (the
  krippendorff package is timed on 200 units and tried on 2,000 under a 4 GiB address-space limit).
* 1,000 bootstrap resamples of PRMSE on 100,000 responses: target <= 10 s.

The peers (rsmtool, irrCAC, krippendorff) are installed into their own virtual environment, ``.cache/oracle-venv``
(shared with ``make test-oracle``), and timed in a subprocess (``tests/oracle/peers.py``); if they cannot be
installed the script says why and prints our numbers alone.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import easl_toolkit.core.metrics as M  # noqa: E402
from easl_toolkit.core.metrics import evaluate, observed_metrics  # noqa: E402
from easl_toolkit.core.metrics.bootstrap import bootstrap_prmse  # noqa: E402

PEER_VENV = ROOT / ".cache" / "oracle-venv"
PEERS = ROOT / "tests" / "oracle" / "peers.py"
PEER_PACKAGES = ["rsmtool", "irrCAC", "krippendorff"]


def best_of(func, repeat=3):
    times, value = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        value = func()
        times.append(time.perf_counter() - t)
    return min(times), times[0], value


def make_data(n, seed=0, q=6, raters=2, missing=0.0):
    rng = np.random.default_rng(seed)
    t = rng.normal((q + 1) / 2, 1.0, n)
    h = np.clip(np.round(t[:, None] + rng.normal(0, 0.7, (n, raters))), 1, q)
    if missing:
        h[rng.random((n, raters)) < missing] = np.nan
    m = t + rng.normal(0, 0.5, n)
    return h, m, np.arange(1.0, q + 1)


def peer_python() -> tuple[str | None, str]:
    """The peer venv's python, installing rsmtool, irrCAC and krippendorff on first use; (None, why) on failure."""
    py = PEER_VENV / "bin" / "python"
    check = [str(py), "-c", "import rsmtool, irrCAC, krippendorff"]
    if py.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return str(py), "ok"
    PEER_VENV.parent.mkdir(parents=True, exist_ok=True)
    log = PEER_VENV.parent / "oracle-install.log"
    print(f"installing {', '.join(PEER_PACKAGES)} into {PEER_VENV} (log: {log}) ...", flush=True)
    steps = [
        [sys.executable, "-m", "venv", str(PEER_VENV)],
        [str(py), "-m", "pip", "install", "--quiet", *PEER_PACKAGES],
        # numba (via rsmtool -> shap) needs coverage >= 7 to import; irrCAC pins an older one it does not use
        [str(py), "-m", "pip", "install", "--quiet", "coverage>=7.4"],
    ]
    with open(log, "w") as f:
        for step in steps:
            if subprocess.run(step, stdout=f, stderr=subprocess.STDOUT).returncode != 0:
                return None, f"`{' '.join(step[-3:])}` failed (see {log})"
    if subprocess.run(check, capture_output=True).returncode != 0:
        return None, f"the peers were installed but do not import (see {log})"
    return str(py), "ok"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100,000 responses instead of 1,000,000")
    ap.add_argument("--no-peers", action="store_true", help="do not install or time the peer packages")
    args = ap.parse_args(argv)
    n = 100_000 if args.quick else 1_000_000
    h, m, cats = make_data(n)
    rows = []

    def report(name, ours, target, peer=None, note=""):
        rows.append((name, ours, target, peer, note))
        ratio = f"  peer {peer:.3f} s -> {peer / ours:.0f}x faster" if peer else ""
        print(f"{name}: {ours:.3f} s (target {target}){ratio}{'  ' + note if note else ''}", flush=True)

    # 1. the whole suite: two complete human columns, then four with 20% of the ratings missing
    def whole_suite(hum, sysm, label):
        first = time.perf_counter()
        evaluate(hum, {"sys": sysm}, scale=M.Scale(1, 6))
        first = time.perf_counter() - first
        warm, _, _ = best_of(lambda: evaluate(hum, {"sys": sysm}, scale=M.Scale(1, 6)), 2)
        report(
            f"whole evaluate suite, {n:,} responses x {label} + 1 system",
            warm,
            "<= 5 s",
            note=f"(first call {first:.3f} s)",
        )

    whole_suite(h, m, "2 humans")
    h4, m4, _ = make_data(n, seed=4, raters=4, missing=0.2)
    whole_suite(h4, m4, "4 humans (20% missing)")
    del h4, m4

    # 2. RSMTool-equivalent subset
    mr = np.clip(np.round(m), 1, 6)

    def rsmtool_like():
        observed_metrics(h[:, 0], m, categories=cats, ranks=False)
        observed_metrics(h[:, 0], mr, categories=cats, ranks=False)
        observed_metrics(h[:, 0], h[:, 1], categories=cats, smd_method="pooled", ranks=False)
        return M.prmse(m, h)

    ours_rsm, _, _ = best_of(rsmtool_like)

    # 3. Gwet AC2 on n x 2
    pair = np.column_stack([h[:, 0], mr])
    ours_ac2, _, _ = best_of(lambda: M.gwet_ac(pair, cats, weights="quadratic"), 5)

    # 4. interval alpha on continuous n x 2, with its peak memory
    cont = np.random.default_rng(1).normal(size=(n, 2))
    ours_alpha, _, _ = best_of(lambda: M.krippendorff_alpha(cont, level="interval"))
    tracemalloc.start()
    M.krippendorff_alpha(cont, level="interval")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    # 5. bootstrap of PRMSE
    nb = 100_000
    hb, mb, _ = make_data(nb, seed=2)
    hb[np.random.default_rng(3).random(nb) < 0.5, 1] = np.nan
    boot, _, res = best_of(lambda: bootstrap_prmse(mb, hb, 1000, seed=0), 1)

    peers, why = {}, "skipped (--no-peers)"
    if not args.no_peers:
        py, why = peer_python()
        if py:
            with tempfile.TemporaryDirectory() as d:
                np.savez(Path(d) / "data.npz", human=h, system=m, cats=cats)
                out = Path(d) / "t.json"
                r = subprocess.run(
                    [py, str(PEERS), str(Path(d) / "data.npz"), str(out), "--time"], capture_output=True, text=True
                )
                if r.returncode == 0:
                    peers = json.loads(out.read_text())
                else:
                    why = "peer timing failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
                big = subprocess.run(
                    [py, str(PEERS), "--krippendorff-big", "2000", "4"], capture_output=True, text=True
                )
                peers["kripp_big"] = (
                    json.loads(big.stdout)
                    if big.returncode == 0 and big.stdout.strip()
                    else {"ok": False, "error": (big.stderr.strip().splitlines() or ["crashed"])[-1]}
                )
    if not peers:
        print(f"peers: {why}")

    report(
        f"RSMTool set (metrics_helper x3 + prmse_true), {n:,} responses",
        ours_rsm,
        ">= 20x faster than RSMTool",
        peers.get("rsmtool_metrics_helper_x3_plus_prmse"),
    )
    report(
        f"Gwet AC2 (quadratic), {n:,} x 2 ratings", ours_ac2, ">= 50x faster than irrCAC", peers.get("irrcac_gwet_ac2")
    )
    kb = peers.get("kripp_big")
    knote = ""
    if "krippendorff_interval_200_continuous_units" in peers:
        knote = (
            f"krippendorff package: 200 continuous units {peers['krippendorff_interval_200_continuous_units']:.3f} s"
        )
        if kb:
            knote += "; 2,000 units: " + (f"{kb['seconds']:.1f} s" if kb.get("ok") else kb.get("error", "failed"))
    report(
        f"Krippendorff interval alpha, {n:,} x 2 continuous",
        ours_alpha,
        "<= 1 s",
        note=f"peak memory {peak / 2**20:.1f} MiB = {peak / n:.0f} bytes/response. {knote}",
    )
    report(
        "1,000 bootstrap resamples of PRMSE, 100,000 responses",
        boot,
        "<= 10 s",
        note=f"(PRMSE {res['prmse']:.4f}, 95% interval [{res['ci'][0]:.4f}, {res['ci'][1]:.4f}])",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
