"""`easl status` of an aware project loads no SciPy (a third of a second of the 0.4 s target at 10,000 items), and
the allocation's convolution by numpy's FFT gives what ``scipy.signal.fftconvolve`` gave."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from easl_toolkit.core.models.aware import alloc as aware_alloc


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "; print(*sys.modules)"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def test_the_aware_model_modules_import_no_scipy() -> None:
    mods = _modules_after(
        "import sys, easl_toolkit.core.models.aware.fit, easl_toolkit.core.models.aware.data, "
        "easl_toolkit.core.models.aware.alloc, easl_toolkit.core.models.aware.posterior, "
        "easl_toolkit.core.models.aware.model"
    )
    assert not {m for m in mods if m == "scipy" or m.startswith("scipy.")}


def test_status_of_an_aware_project_imports_no_scipy(tmp_path: Any) -> None:
    items = tmp_path / "items.csv"
    items.write_text("id,text\n" + "".join(f"i{k},t{k}\n" for k in range(50)))
    project = tmp_path / "p.easl"
    init = [
        sys.executable,
        "-m",
        "easl_toolkit.tui.cli",
        "init",
        str(project),
        "--items",
        str(items),
        "--stop-at",
        "0.9",
    ]
    assert subprocess.run(init, capture_output=True, text=True).returncode == 0
    mods = _modules_after(
        "import sys\nfrom easl_toolkit.tui.cli import main\nsys.argv = ['easl', 'status', "
        f"{str(project)!r}, '--json']\ntry:\n    main()\nexcept SystemExit:\n    pass\nsys.stdout.write('\\n')"
    )
    assert "easl_toolkit.core.models.aware.model" in mods
    assert not {m for m in mods if m == "scipy" or m.startswith("scipy.")}


@pytest.mark.parametrize("n", [5_000, 60_000])
def test_the_binned_sums_equal_those_of_scipy_fftconvolve(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The binned path with ``numpy.fft`` equals the earlier ``scipy.signal.fftconvolve`` form to rounding."""
    from scipy import signal, special

    rng = np.random.default_rng(n)
    m, v = rng.normal(0, 0.2, n), rng.uniform(1e-3, 2e-2, n)
    vs = [v, 1.0 / (1.0 / v + 40.0)]
    monkeypatch.setattr(aware_alloc, "EXACT_BELOW", 0)
    new = aware_alloc.misorder_sums(m, v, vs)

    # the earlier computation, step by step (commit 9bf5a7b)
    grid = int(np.clip(n // 8, 256, aware_alloc._GRID))
    lo, hi = float(m.min()), float(m.max())
    width = (hi - lo) / (grid - 1)
    pos = (m - lo) / width
    k = aware_alloc._V_CLASSES
    cls = np.clip(np.searchsorted(np.quantile(v, np.linspace(0, 1, k + 1)), v, side="right") - 1, 0, k - 1)
    v_cls = np.bincount(cls, v, k) / np.maximum(np.bincount(cls, minlength=k), 1)
    left = np.clip(np.floor(pos).astype(np.int64), 0, grid - 2)
    frac = pos - left
    flat = cls * grid + left
    hist = (np.bincount(flat, 1.0 - frac, k * grid) + np.bincount(flat + 1, frac, k * grid)).reshape(k, grid)
    lvs = [np.log(x) for x in vs]
    g_lo, g_hi = min(float(x.min()) for x in lvs), max(float(x.max()) for x in lvs)
    v_grid = np.exp(np.linspace(g_lo, g_hi, 16))
    d = np.abs(np.arange(-(grid - 1), grid) * width)
    table = np.stack(
        [
            signal.fftconvolve(
                special.ndtr(-d[None, :] / np.sqrt(vg + v_cls[:, None])), hist, mode="valid", axes=1
            ).sum(0)
            for vg in v_grid
        ]
    )
    for lv, got in zip(lvs, new):
        t = (lv - g_lo) / (g_hi - g_lo) * 15
        a0 = np.clip(np.floor(t).astype(np.int64), 0, 14)
        ta = t - a0
        f0 = table[a0, left] * (1 - frac) + table[a0, left + 1] * frac
        f1 = table[a0 + 1, left] * (1 - frac) + table[a0 + 1, left + 1] * frac
        np.testing.assert_allclose(got, f0 * (1 - ta) + f1 * ta, rtol=1e-9, atol=1e-9 * n)
