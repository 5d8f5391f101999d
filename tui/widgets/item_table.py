"""A virtualised table of items with their posterior estimates, sortable by uncertainty, estimate or count.

Only the rows in view are formatted (Textual's line API: ``render_line`` is called once per visible line), so the
cost of a frame does not depend on the number of items; a re-sort by key is one ``numpy.argsort`` (O(N log N),
about 10 ms at N = 100,000), and new data for the same items (a Monitor refresh) only moves the rows whose value
changed (``tui.widgets.ordering.update_stable_order``, O(N) with a small constant).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from easl_toolkit.tui.widgets.ordering import stable_order, update_stable_order

#: Sort keys: (column, descending by default, label in the header).
SORT_KEYS: dict[str, tuple[str, bool, str]] = {
    "uncertainty": ("variance", True, "sd"),
    "estimate": ("estimate", True, "estimate"),
    "count": ("n_annotations", False, "n"),
}

#: Footer group of the sort keys.
SORT_GROUP = Binding.Group("sort sd/est/n/rev", compact=True)


@dataclass(frozen=True)
class ItemColumns:
    """Column arrays of the items shown in an :class:`ItemTable` (one entry per item, same order)."""

    item_id: np.ndarray
    estimate: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    variance: np.ndarray
    n_annotations: np.ndarray
    text: np.ndarray

    @classmethod
    def from_frame(cls, frame) -> ItemColumns:
        """Take the columns of an estimates table (``Project.estimates()``) as numpy arrays, without copying rows.

        Parameters
        ----------
        frame : pandas.DataFrame
            Has ``item_id, estimate, ci_low, ci_high, variance, n_annotations`` and optionally ``text``.
        """
        n = len(frame)
        text = frame["text"].to_numpy(dtype=object) if "text" in frame.columns else np.full(n, "", dtype=object)
        return cls(
            item_id=frame["item_id"].to_numpy(dtype=object),
            estimate=frame["estimate"].to_numpy(dtype=np.float64),
            ci_low=frame["ci_low"].to_numpy(dtype=np.float64),
            ci_high=frame["ci_high"].to_numpy(dtype=np.float64),
            variance=frame["variance"].to_numpy(dtype=np.float64),
            n_annotations=frame["n_annotations"].to_numpy(dtype=np.int64),
            text=text,
        )

    @classmethod
    def empty(cls) -> ItemColumns:
        """A table with no rows."""
        f = np.empty(0, dtype=np.float64)
        o = np.empty(0, dtype=object)
        return cls(o, f, f, f, f, np.empty(0, dtype=np.int64), o)

    def __len__(self) -> int:
        return int(self.item_id.shape[0])


def sort_order(columns: ItemColumns, key: str, descending: bool) -> np.ndarray:
    """Row order for a sort key: a stable argsort, NaN last, ties kept in item order.

    Parameters
    ----------
    columns : ItemColumns
    key : str
        One of :data:`SORT_KEYS` (``uncertainty`` sorts by posterior variance).
    descending : bool

    Returns
    -------
    numpy.ndarray
        int64 permutation of ``range(len(columns))``.
    """
    return stable_order(sort_values(columns, key, descending))


def sort_values(columns: ItemColumns, key: str, descending: bool) -> np.ndarray:
    """The values whose ascending stable order is the row order: the key's column, negated when descending
    (negating keeps ties in item order and leaves NaN at the end in both directions)."""
    values = np.asarray(getattr(columns, SORT_KEYS[key][0]), dtype=np.float64)
    return -values if descending else values


def _fmt(value: float, width: int, digits: int) -> str:
    if not np.isfinite(value):
        return "-".rjust(width)
    return f"{value:{width}.{digits}f}"


def _cell(text: str, width: int) -> str:
    text = str(text).replace("\n", " ")
    if len(text) > width:
        return text[: max(width - 1, 0)] + "…"
    return text.ljust(width)


class ItemTable(ScrollView, can_focus=True):
    """Items with estimate, 95% credible interval, posterior sd and annotation count; virtualised rows.

    Keys: arrows / PgUp / PgDn / Home / End move the cursor; ``u``, ``e``, ``c`` sort by uncertainty, estimate,
    count; ``r`` reverses the order.
    """

    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("u", "sort('uncertainty')", "Sort by sd", group=SORT_GROUP),
        Binding("e", "sort('estimate')", "Sort by estimate", group=SORT_GROUP),
        Binding("c", "sort('count')", "Sort by count", group=SORT_GROUP),
        Binding("r", "reverse", "Reverse", group=SORT_GROUP),
    ]

    COMPONENT_CLASSES = {"item-table--header", "item-table--cursor", "item-table--odd"}

    DEFAULT_CSS = """
    ItemTable { height: 1fr; }
    ItemTable > .item-table--header { text-style: bold; background: $panel; }
    ItemTable > .item-table--cursor { background: $accent 40%; }
    ItemTable > .item-table--odd { background: $surface-lighten-1 30%; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)
    sort_key: reactive[str] = reactive("uncertainty", repaint=False)
    descending: reactive[bool] = reactive(True, repaint=False)

    class CursorMoved(Message):
        """The cursor moved to another row (or the rows under it changed)."""

        def __init__(self, table: ItemTable) -> None:
            super().__init__()
            self.table = table

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._columns = ItemColumns.empty()
        self._order = np.empty(0, dtype=np.int64)
        self.show_horizontal_scrollbar = False

    # ----------------------------------------------------------------- data
    @property
    def row_count(self) -> int:
        """Number of items in the table."""
        return len(self._columns)

    @property
    def order(self) -> np.ndarray:
        """Current row order (indices into the columns), read-only view."""
        view = self._order.view()
        view.flags.writeable = False
        return view

    def set_data(self, columns: ItemColumns) -> None:
        """Replace the rows; keeps the sort key, direction and the cursor's item when it is still present.

        When the new columns hold the same items (the same ``item_id`` array, as the Monitor's refreshes give),
        the order is updated from the previous one for the few values that changed
        (:func:`~tui.widgets.ordering.update_stable_order`, the same order as a full re-sort).
        """
        old = self._columns
        current = self.current_item_id()
        same_items = len(old) == len(columns) and (old.item_id is columns.item_id or len(columns) == 0)
        current_index = int(self._order[min(self.cursor, self.row_count - 1)]) if current is not None else None
        self._columns = columns
        if same_items:
            self._order = update_stable_order(
                self._order,
                sort_values(old, self.sort_key, self.descending),
                sort_values(columns, self.sort_key, self.descending),
            )
        else:
            self._order = sort_order(columns, self.sort_key, self.descending)
        self.virtual_size = Size(self.size.width, len(columns) + 1)
        if current is not None and len(columns):
            self.cursor = self._row_of(current, current_index if same_items else None)
        else:
            self.cursor = min(self.cursor, max(len(columns) - 1, 0))
        self.refresh()

    def _row_of(self, item_id, index: int | None = None) -> int:
        """Display row of ``item_id`` (its column position ``index`` when known), else the cursor, clamped."""
        if index is None:
            hits = np.flatnonzero(self._columns.item_id == item_id)
            if hits.size == 0:
                return min(self.cursor, max(self.row_count - 1, 0))
            index = int(hits[0])
        positions = np.flatnonzero(self._order == index)
        return int(positions[0])

    def current_item_id(self):
        """The item id under the cursor, or None when the table is empty."""
        if self.row_count == 0:
            return None
        return self._columns.item_id[self._order[min(self.cursor, self.row_count - 1)]]

    def row_values(self, row: int) -> dict:
        """The values shown on display row ``row`` (0 = first row under the header)."""
        i = int(self._order[row])
        c = self._columns
        return {
            "item_id": c.item_id[i],
            "estimate": float(c.estimate[i]),
            "ci_low": float(c.ci_low[i]),
            "ci_high": float(c.ci_high[i]),
            "variance": float(c.variance[i]),
            "n_annotations": int(c.n_annotations[i]),
            "text": c.text[i],
        }

    # -------------------------------------------------------------- actions
    def action_sort(self, key: str) -> None:
        """Sort by ``key`` (the cursor goes to the top); pressing the active key again reverses the order."""
        if key == self.sort_key:
            self.descending = not self.descending
        else:
            self.sort_key = key
            self.descending = SORT_KEYS[key][1]
        self._order = sort_order(self._columns, self.sort_key, self.descending)
        self.cursor = 0
        self.refresh()

    def action_reverse(self) -> None:
        """Reverse the current order."""
        self.action_sort(self.sort_key)

    def action_cursor(self, delta: int) -> None:
        self.cursor = int(np.clip(self.cursor + delta, 0, max(self.row_count - 1, 0)))

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(self.size.height - 2, 1))

    def action_jump(self, row: int) -> None:
        self.cursor = max(self.row_count - 1, 0) if row < 0 else row

    def watch_cursor(self, old: int, new: int) -> None:
        visible = max(self.size.height - 1, 1)
        top = int(self.scroll_offset.y)
        if new < top:
            self.scroll_to(y=new, animate=False, immediate=True)
        elif new >= top + visible:
            self.scroll_to(y=new - visible + 1, animate=False, immediate=True)
        self.refresh()
        self.post_message(self.CursorMoved(self))

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1:
            row = int(self.scroll_offset.y) + event.y - 1
            if 0 <= row < self.row_count:
                self.cursor = row

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, self.row_count + 1)

    # ------------------------------------------------------------ rendering
    def _widths(self, width: int) -> tuple[int, int]:
        """(item id width, text width) for a total width; the fixed numeric part is 42 cells."""
        rest = max(width - 42, 8)
        id_w = min(max(rest // 3, 8), 16)
        return id_w, max(rest - id_w, 0)

    def _header(self, width: int) -> str:
        id_w, text_w = self._widths(width)
        arrow = "▼" if self.descending else "▲"
        labels = {"estimate": "estimate", "ci": "95% interval", "sd": "sd", "n": "n"}
        active = SORT_KEYS[self.sort_key][2]
        labels[active] = labels[active] + arrow
        return (
            f" {_cell('item', id_w)} {labels['estimate']:>9} {labels['ci']:^15} {labels['sd']:>7} {labels['n']:>5} "
            f"{_cell('text', text_w)}"
        )

    def _row_text(self, row: int, width: int) -> str:
        id_w, text_w = self._widths(width)
        c = self._columns
        i = int(self._order[row])
        sd = float(np.sqrt(c.variance[i])) if c.variance[i] >= 0 else float("nan")
        ci = f"[{_fmt(c.ci_low[i], 6, 1)},{_fmt(c.ci_high[i], 6, 1)}]"
        return (
            f" {_cell(c.item_id[i], id_w)} {_fmt(c.estimate[i], 9, 2)} {ci:^15} {_fmt(sd, 7, 2)} "
            f"{int(c.n_annotations[i]):>5} {_cell(c.text[i], text_w)}"
        )

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if y == 0:
            header = base + self.get_component_rich_style("item-table--header")
            return Strip([Segment(_cell(self._header(width), width), header)], width)
        row = int(self.scroll_offset.y) + y - 1
        if row >= self.row_count:
            return Strip.blank(width, base)
        style: Style = base
        if row == self.cursor:
            style = base + self.get_component_rich_style("item-table--cursor")
        elif row % 2:
            style = base + self.get_component_rich_style("item-table--odd")
        return Strip([Segment(_cell(self._row_text(row, width), width), style)], width)
