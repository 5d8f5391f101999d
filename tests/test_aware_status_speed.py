"""What `easl status` of an aware project pays for: no scipy.signal import (about a second), and the stopping
figure without drawing rank intervals."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from easl_toolkit.core.models.aware.fit import Observations, fit
from easl_toolkit.core.models.aware.model import AwareModel


def test_the_aware_model_does_not_import_scipy_signal():
    code = (
        "import sys, easl_toolkit.core.models.aware.model, easl_toolkit.core.models.aware.posterior; "
        "print('scipy.signal' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_stop_decision_on_a_large_project_draws_no_rank_intervals(monkeypatch):
    import easl_toolkit.core.models.aware.posterior as post
    from easl_toolkit.core.models import Hyper

    rng = np.random.default_rng(0)
    n = 30_000
    item = np.repeat(np.arange(n), 3)
    x = np.clip(rng.beta(2, 2, n)[item] + rng.normal(0, 0.1, item.size), 0, 1)
    state = fit(Observations.build(item, rng.integers(40, size=item.size), x, n_items=n)).to_arrays()
    calls = []
    real = post.RankFigures._draw
    monkeypatch.setattr(post.RankFigures, "_draw", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    d = AwareModel(Hyper(method="aware", stop_at=0.9)).stop_decision(state, np.random.default_rng(1))
    assert d is not None and 0.8 < d.expected_spearman < 1.0 and d.min_count == 3
    assert calls == []  # the expected Spearman came from a subset; no draw over all items
