"""Terminal charts drawn with plotext: the convergence chart and the histogram of estimates.

plotext keeps one global figure, so every drawing takes :data:`PLOT_LOCK`; a chart is re-drawn only when its data
or its size changes (the last rendering is cached), so a monitor refresh with unchanged figures costs nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import plotext
from numpy.typing import NDArray
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

#: plotext's figure is process-global; drawings are serialised.
PLOT_LOCK = threading.Lock()


def render_plot(draw: Callable[[object], None], width: int, height: int) -> Text:
    """Draw a plotext figure of ``width`` x ``height`` cells and return it as rich Text.

    Parameters
    ----------
    draw : callable
        Receives plotext's master figure (cleared, sized, themed "simple": coloured signals, no background) and
        adds signals and dressing to it.
    width, height : int
        Size in terminal cells.
    """
    with PLOT_LOCK:
        fig = plotext.figure
        fig.clear()
        fig.plot_size(max(width, 10), max(height, 4))
        fig.theme("simple")
        draw(fig)
        out = fig.build().string()
        fig.clear()
    return Text.from_ansi(out, no_wrap=True, end="")


class PlotextChart(Widget):
    """Base class: a widget whose content is a plotext figure sized to the widget."""

    DEFAULT_CSS = """
    PlotextChart { height: 10; }
    """

    #: Shown instead of the chart when there is no data yet.
    empty_message = "no data yet"

    #: The bytes of the data drawn (None: no data); a new value repaints the chart.
    data_key: reactive[object] = reactive(None)

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._cache: tuple[object, tuple[int, int], Text] | None = None

    def draw(self, fig) -> None:
        """Add this chart's signals to ``fig`` (subclasses)."""
        raise TypeError(f"{type(self).__name__} must define draw()")

    def render(self) -> Text:
        width, height = self.size.width, self.size.height
        if width < 12 or height < 4:
            return Text("")
        if self.data_key is None:
            return Text(self.empty_message, style="dim")
        size = (width, height)
        if self._cache is not None and self._cache[0] == self.data_key and self._cache[1] == size:
            return self._cache[2]
        text = render_plot(self.draw, width, height)
        self._cache = (self.data_key, size, text)
        return text


class ConvergenceChart(PlotextChart):
    """Mean and maximum posterior variance over iterations, with rank stability (Spearman rho) on the right axis."""

    empty_message = "convergence: waiting for the first completed iteration"

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._iterations: NDArray[np.float64] = np.empty(0)
        self._mean_var: NDArray[np.float64] = np.empty(0)
        self._max_var: NDArray[np.float64] = np.empty(0)
        self._rho: NDArray[np.float64] = np.empty(0)

    def set_history(self, iterations, mean_var, max_var, rho) -> None:
        """Set the series, one value per iteration: mean and maximum posterior variance (unit scale, as
        ``easl status``) and rho (NaN where undefined, e.g. the first iteration)."""
        self._iterations = np.asarray(iterations, dtype=np.float64)
        self._mean_var = np.asarray(mean_var, dtype=np.float64)
        self._max_var = np.asarray(max_var, dtype=np.float64)
        self._rho = np.asarray(rho, dtype=np.float64)
        series = (self._iterations, self._mean_var, self._max_var, self._rho)
        self.data_key = tuple(a.tobytes() for a in series) if self._iterations.size else None

    def draw(self, fig) -> None:
        x = self._iterations.tolist()
        fig.draw(fig.signal(x, self._max_var.tolist(), marker="braille").lines().label("max var"))
        fig.draw(fig.signal(x, self._mean_var.tolist(), marker="braille").lines().label("mean var"))
        ok = np.isfinite(self._rho)
        if ok.any():
            rho = fig.signal(self._iterations[ok].tolist(), self._rho[ok].tolist(), marker="dot", yside="right")
            fig.draw(rho.lines().label("rank rho"))
            low = min(0.0, float(np.floor(self._rho[ok].min() * 10.0) / 10.0))
            fig.ruler("y", "right").lim(low, 1.0)
        fig.legend(active=False)  # no room for it: the title names the series in their colours
        first, last = int(self._iterations.min()), int(self._iterations.max())
        step = max(1, int(np.ceil((last - first + 1) / 6)))
        fig.ruler("x").ticks(list(range(first, last + 1, step)))
        fig.title("max var · mean var · rank ρ (right)")
        fig.label("iteration")


class EstimateHistogram(PlotextChart):
    """Histogram of the current estimates on the project's score range (counts binned with numpy)."""

    empty_message = "estimates: no items"

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._counts: NDArray[np.float64] = np.empty(0)
        self._edges: NDArray[np.float64] = np.empty(0)

    def set_histogram(self, counts, edges) -> None:
        """Set bin counts (k) and edges (k + 1), e.g. from ``numpy.histogram``."""
        self._counts = np.asarray(counts, dtype=np.float64)
        self._edges = np.asarray(edges, dtype=np.float64)
        self.data_key = (self._counts.tobytes(), self._edges.tobytes()) if self._counts.size else None

    def draw(self, fig) -> None:
        centres = (self._edges[:-1] + self._edges[1:]) / 2.0
        fig.draw(fig.bar(centres.tolist(), self._counts.tolist(), width=1.0))
        fig.title("estimates")
