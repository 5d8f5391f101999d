"""Monitor: live convergence of a project while another process (the plugin service, an ingest, another
annotator) writes it.

A worker thread polls the file every ``poll_interval`` seconds (``MonitorSource.poll``: nothing is read when the
file has not changed) and posts the snapshot to the screen, so the keyboard is never blocked by a read; the item
table is virtualised, so a refresh costs an update of the sort order for the items that changed plus the visible
rows, whatever the number of items.
"""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Footer, Header, Static
from textual.worker import get_current_worker

from easl_toolkit.core.errors import EaslError
from easl_toolkit.tui.commands.status import FLAG_STYLES
from easl_toolkit.tui.screens.monitor_data import AwarePanel, MonitorSnapshot, MonitorSource
from easl_toolkit.tui.screens.stop_target import StopChoice, StopTargetPrompt
from easl_toolkit.tui.widgets.charts import ConvergenceChart, EstimateHistogram
from easl_toolkit.tui.widgets.item_table import ItemTable

if TYPE_CHECKING:
    from rich.console import RenderableType

_FROZEN = threading.Event()


def freeze_long_lived_objects() -> None:
    """Once per process: move every object alive now (the modules, classes and widgets of the app, ~150,000
    objects; called when the Monitor shows its first reading) out of the cyclic garbage collector's reach
    (``gc.freeze``). Otherwise each full collection walks
    them all, a 70-100 ms pause that lands in a Monitor refresh now and then. Objects created later are collected
    as usual (the item arrays are numpy arrays, which the collector never walks); no collection is forced first,
    so opening the Monitor never stalls the screen."""
    if not _FROZEN.is_set():
        _FROZEN.set()
        gc.freeze()


def _num(value, digits: int = 2) -> str:
    if value is None:
        return "-"
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    if value != value:  # NaN
        return "-"
    return f"{value:,.{digits}f}"


class MonitorScreen(Screen):
    """Iteration, annotations, posterior variance, rank stability, charts and the items table of the project file
    ``project``, read every ``poll_interval`` seconds when it changed."""

    CSS_PATH = "../styles/monitor.tcss"
    HELP = """\
**Monitor** — live figures of the project file, refreshed when it changes.

| key | action |
|---|---|
| ↑ ↓ PgUp PgDn Home End | move in the items table |
| u | sort by uncertainty (sd) |
| e | sort by estimate |
| c | sort by annotation count |
| r | reverse the order |
| Ctrl+R | read the project now |
| t | set the stop target (aware projects) |

Aware projects add a panel: the expected Spearman with the truth (the model's own estimate, from its posterior; no
held-out ratings needed) against the stop target (no new HITs once reached; `easl demo --project` sets it to the
demo's `--target`), and the annotators (offset, slope, noise, leave-one-out agreement, flag).

The chart shows mean and maximum posterior variance (unit scale, as `easl status`) per iteration and the rank
stability (Spearman's rho between the
estimates of successive iterations; the last point is live). Intervals are 95% credible intervals.
"""

    BINDINGS = [
        Binding("ctrl+r", "refresh_now", "Refresh", show=False),
        Binding("t", "stop_target", "Stop target", show=False),  # aware projects only: listed in the help
    ]

    class Snapshot(Message):
        """A new reading of the project (posted from the polling thread)."""

        def __init__(self, snapshot: MonitorSnapshot) -> None:
            super().__init__()
            self.snapshot = snapshot

    class PollFailed(Message):
        """The polling thread could not read the project."""

        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    #: The reading on display (None until the first one); every poll that finds a change sets a new one.
    snapshot: var[MonitorSnapshot | None] = var(None, always_update=True)

    def __init__(self, project: Path, poll_interval: float = 1.0) -> None:
        super().__init__()
        self.project = Path(project)
        self.poll_interval = poll_interval
        self._wake = threading.Event()
        self._force = threading.Event()
        self._stop = threading.Event()

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("reading the project…", id="stats")
        with Horizontal(id="charts"):
            yield ConvergenceChart(id="convergence")
            yield EstimateHistogram(id="histogram")
        aware = Static("", id="aware")
        aware.display = False  # aware projects only: stop figures and the annotator table
        yield aware
        yield ItemTable(id="items-table")
        yield Static("", id="item-detail")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.sub_title = "Monitor"
        self.query_one(ItemTable).focus()
        self._force.set()
        self._poll_loop()

    def on_unmount(self) -> None:
        self._stop.set()
        self._wake.set()

    @work(thread=True, exclusive=True, group="monitor", exit_on_error=False)
    def _poll_loop(self) -> None:
        """Poll the project file until the screen goes away (runs in its own thread)."""
        worker = get_current_worker()
        source = MonitorSource(self.project)
        while not worker.is_cancelled and not self._stop.is_set():
            force = self._force.is_set()
            self._force.clear()
            try:
                snapshot = source.poll(force=force)
            except EaslError as exc:
                self.post_message(self.PollFailed(str(exc)))
                snapshot = None
            except Exception as exc:  # a reader racing a writer's schema change or a locked file: retry next poll
                self.post_message(self.PollFailed(f"{self.project}: could not read the project ({exc})."))
                snapshot = None
            if snapshot is not None:
                self.post_message(self.Snapshot(snapshot))
            self._wake.wait(self.poll_interval)
            self._wake.clear()

    def action_refresh_now(self) -> None:
        """Read the project now, even if it looks unchanged."""
        self._force.set()
        self._wake.set()

    def action_stop_target(self) -> None:
        """Change the stop target of an aware project (:class:`~tui.screens.stop_target.StopTargetPrompt`)."""
        aware = self.snapshot.aware if self.snapshot is not None else None
        if aware is None:
            self.notify(
                "The stop target needs the method aware; a project's method is fixed when it is created (a new "
                "one: easl init NEW.easl --items FILE --method aware).",
                severity="warning",
            )
            return
        current = aware.stop.get("target")
        self.app.push_screen(StopTargetPrompt(current), self._set_stop_target)

    def _set_stop_target(self, choice: StopChoice) -> None:
        if choice is None:
            return
        from easl_toolkit.core.store import Project

        (target,) = choice
        try:
            with Project.open(self.project) as project:
                project.set_stop_at(target)
        except EaslError as exc:
            self.notify(str(exc), severity="error")
            return
        self.notify(f"Stop target {'removed' if target is None else f'set to {target:g}'}.", timeout=3)
        self.action_refresh_now()

    @on(PollFailed)
    def _poll_failed(self, message: PollFailed) -> None:
        self.query_one("#stats", Static).update(Text(message.error, style="bold red"))

    @on(Snapshot)
    def _on_snapshot(self, message: Snapshot) -> None:
        self.snapshot = message.snapshot

    def watch_snapshot(self, snap: MonitorSnapshot | None) -> None:
        """The figures, charts and table of a new reading."""
        if snap is None:
            return
        s = snap.status
        rho = snap.history.rho[-1] if snap.history.rho.size else float("nan")
        low, high = snap.score_range
        line1 = (
            f"[b]iteration {s.iteration}[/b] · {s.n_observations:,} annotations · "
            f"{s.n_hits_open:,} open HITs · {s.n_items:,} items · scores {low:g}–{high:g}"
        )
        line2 = (
            f"posterior variance mean {_num(s.mean_variance, 4)} max {_num(s.max_variance, 4)} "
            f"· rank stability ρ {_num(rho, 3)}"
        )
        self.query_one("#stats", Static).update(line1 + "\n" + line2)
        h = snap.history
        self.query_one(ConvergenceChart).set_history(h.iterations, h.mean_var, h.max_var, h.rho)
        self.query_one(EstimateHistogram).set_histogram(snap.hist_counts, snap.hist_edges)
        self.query_one(ItemTable).set_data(snap.columns)
        self._show_aware(snap.aware)
        self._show_detail()
        freeze_long_lived_objects()  # after the first reading: every module the Monitor uses is loaded

    def _show_aware(self, aware: AwarePanel | None) -> None:
        """The aware panel: expected Spearman against the stop target, and the annotator diagnostics."""
        panel = self.query_one("#aware", Static)
        panel.display = aware is not None
        if aware is None:
            return
        from rich.console import Group
        from rich.table import Table

        stop = aware.stop
        target = stop.get("target")
        head: RenderableType = Text.assemble(
            ("expected Spearman ", "bold"),
            _num(stop.get("expected_spearman"), 3),
            " (the model's estimate of its Spearman with the truth)",
            f" · stop target {_num(target, 3) if target is not None else 'none (t sets one)'} · ",
            ("reached: " if stop.get("reached") else "") + str(stop.get("reason", "")),
        )
        if "systems" in stop:  # an evaluation campaign: its metrics with intervals, what was spent, what all would cost
            summary = Text.assemble(
                ("human scores ", "bold"),
                f"{stop['human_scores_spent']} spent, {stop['human_scores_counted']} counted · every response once / "
                f"twice: {stop['cost_score_all_once']} / {stop['cost_score_all_twice']} · ",
                ("reached: " if stop.get("reached") else "") + str(stop.get("reason", "")),
            )
            head = Group(summary, campaign_columns(stop))
        panel.set_class("systems" in stop, "campaign")
        table = Table(box=None, padding=(0, 1), header_style="bold")
        for col in ("annotator", "scores", "offset", "slope", "noise", "agreement", "flag"):
            table.add_column(col, justify="left" if col in ("annotator", "flag") else "right")
        for r in aware.annotators.itertuples(index=False):
            flag = r.flag or ""
            table.add_row(
                "(none)" if r.annotator is None else str(r.annotator),
                str(r.n_scores),
                _num(r.offset),
                _num(r.slope),
                _num(r.noise),
                _num(r.agreement),
                Text(flag, style=FLAG_STYLES.get(flag, "bold")) if flag else "",
            )
        more = aware.n_annotators - len(aware.annotators)
        parts: list[RenderableType] = [head, table]
        if more > 0:
            parts.append(Text(f"… {more} more annotators (easl status --annotators)"))
        panel.update(Group(*parts))

    def _show_detail(self) -> None:
        table = self.query_one(ItemTable)
        detail = self.query_one("#item-detail", Static)
        if table.row_count == 0:
            detail.update("")
            return
        v = table.row_values(table.cursor)
        detail.update(
            Text.assemble(
                (str(v["item_id"]), "bold"),
                f" {_num(v['estimate'])} [{_num(v['ci_low'])}, {_num(v['ci_high'])}] "
                f"n={v['n_annotations']} · {v['text']}",
                no_wrap=True,
                overflow="ellipsis",
            )
        )

    @on(ItemTable.CursorMoved)
    def _cursor_moved(self) -> None:
        self._show_detail()


def campaign_columns(stop: dict) -> RenderableType:
    """An evaluation campaign's metrics in the monitor's few lines: one row for the humans and one per system, each
    metric as its estimate and the half-width of its 95% interval (``easl status`` has the intervals in full)."""
    from rich.table import Table

    metrics = ["mean", "hh_r", "hh_qwk"] + [m for m in next(iter(stop["systems"].values()), {})]
    table = Table(box=None, padding=(0, 1), header_style="bold", title="estimate ± half the 95% interval")
    table.add_column("")
    for m in metrics:
        table.add_column(m, justify="right")

    def cell(fig: dict | None) -> str:
        if fig is None or fig["estimate"] is None:
            return ""
        half = "" if fig["width"] is None else f" ±{fig['width'] / 2:.3f}"
        return f"{fig['estimate']:.3f}{half}"

    humans = {"mean": stop.get("mean_human_score"), **stop.get("human", {})}
    table.add_row("(humans)", *(cell(humans.get(m)) for m in metrics))
    for system, figures in stop["systems"].items():
        table.add_row(system, *(cell(figures.get(m)) for m in metrics))
    return table
