"""Label Studio label configs (XML) for each annotation mode, and how a task's data is laid out for them.

Three layouts (``../shared/reference/label_studio.md``, "Label config for n items scored 0-100"):

- ``slider``: an EASL HIT of n items, one ``<Number>`` slider per item on the project's score range
  (Sakaguchi & Van Durme 2018, section 4: annotators score the n items of a HIT together on a 0-100 scale);
  direct assessment (DA) is the same layout with n = 1.
- ``ranking``: the n items of a HIT ordered best first with ``<Ranker>``/``<List>`` (RA's relative judgements);
  rank r of n becomes the score ``min + (max - min) * (n - 1 - r) / (n - 1)``, which keeps exactly the pairwise
  order (and nothing more) that bounded ranking aggregation (eq 13-22) uses.
- ``pairwise``: two items, ``<Pairwise>``; the chosen one gets the top of the range and the other the bottom.

The items of a HIT are shown in a shuffled order; the task data keeps the order shown (``item_ids``) and the
permutation from the HIT record's order (``permutation[j]`` = position in the HIT record of the item shown at j).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from core.errors import UserError

LAYOUTS = ("slider", "ranking", "pairwise")
XML_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Layout:
    """What a project's label config expects: kind, items per task and the score range."""

    kind: str = "slider"
    n: int = 5
    score_min: float = 0.0
    score_max: float = 100.0

    def __post_init__(self) -> None:
        if self.kind not in LAYOUTS:
            raise UserError(f"label layout {self.kind!r} is unknown; choose one of {', '.join(LAYOUTS)}")
        if self.n < 1 or (self.kind == "pairwise" and self.n != 2) or (self.kind == "ranking" and self.n < 2):
            raise UserError(f"label layout {self.kind!r} cannot show {self.n} items per task")
        if not np.isfinite(self.score_min) or not np.isfinite(self.score_max) or self.score_max <= self.score_min:
            raise UserError(f"score range [{self.score_min}, {self.score_max}] is not a valid range")

    def control_names(self) -> list[str]:
        """Names of the control tags whose results carry the scores."""
        if self.kind == "slider":
            return [f"score_{j}" for j in range(self.n)]
        return ["rank"] if self.kind == "ranking" else ["choice"]

    def to_dict(self) -> dict:
        """JSON-able form (kept in the project file's meta table)."""
        return {"kind": self.kind, "n": self.n, "score_min": self.score_min, "score_max": self.score_max}

    @classmethod
    def from_dict(cls, d: dict) -> "Layout":
        """Inverse of ``to_dict``."""
        return cls(kind=str(d["kind"]), n=int(d["n"]), score_min=float(d["score_min"]),
                   score_max=float(d["score_max"]))


def layout_for_method(method: str, hit_size: int, score_min: float, score_max: float) -> Layout:
    """The default layout of an engine method: sliders for EASL, TrueSkill and DA (n = 1 for DA), ranking for RA.

    RA consumes only the pairwise order of a HIT's scores (eq 13), so a ranking is its natural interface; with two
    items per HIT the ranking becomes a pairwise choice.
    """
    if method == "ra":
        return Layout("pairwise" if hit_size == 2 else "ranking", hit_size, score_min, score_max)
    if method == "da":
        return Layout("slider", 1, score_min, score_max)
    return Layout("slider", hit_size, score_min, score_max)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def label_config(layout: Layout, *, instructions: str | None = None) -> str:
    """The Label Studio label config (XML) for ``layout``."""
    lo, hi = _num(layout.score_min), _num(layout.score_max)
    if layout.kind == "slider":
        header = instructions or (f"Score each text from {lo} to {hi}" if layout.n > 1 else f"Score the text from {lo} to {hi}")
        rows = []
        for j in range(layout.n):
            rows.append(
                '  <View style="display:flex;gap:1em;align-items:center">\n'
                f'    <Text name="text_{j}" value="$text_{j}"/>\n'
                f'    <Number name="score_{j}" toName="text_{j}" min="{lo}" max="{hi}" step="1" slider="true"'
                ' required="true"/>\n'
                "  </View>\n"
            )
        body = "".join(rows)
    elif layout.kind == "ranking":
        header = instructions or "Order the texts from highest (top) to lowest (bottom)"
        body = ('  <List name="items" value="$items" title="Texts"/>\n'
                '  <Ranker name="rank" toName="items"/>\n')
    else:
        header = instructions or "Which text scores higher?"
        body = ('  <Text name="text_0" value="$text_0"/>\n'
                '  <Text name="text_1" value="$text_1"/>\n'
                '  <Pairwise name="choice" toName="text_0,text_1"/>\n')
    return f"<View>\n  <Header value={quoteattr(header)}/>\n{body}</View>\n"


def validate_label_config(xml: str, layout: Layout) -> None:
    """Check ``xml`` with the SDK's label interface and that it has the controls ``layout`` needs.

    Raises ``UserError`` naming the first missing or mismatched control.
    """
    from label_studio_sdk.label_interface import LabelInterface

    try:
        li = LabelInterface(xml)
    except Exception as exc:  # the SDK raises several parser errors; all mean the same to the user
        raise UserError(f"label config is not valid Label Studio XML: {exc}") from exc
    controls = {c.name: c for c in li.controls}
    want_tag = {"slider": "Number", "ranking": "Ranker", "pairwise": "Pairwise"}[layout.kind]
    for name in layout.control_names():
        if name not in controls:
            raise UserError(f"label config has no control named {name!r} (needed by the {layout.kind} layout)")
        if controls[name].tag != want_tag:
            raise UserError(f"label config control {name!r} is a <{controls[name].tag}>, expected <{want_tag}>")
        if layout.kind == "slider":
            attr = controls[name].attr
            lo, hi = float(attr.get("min", "nan")), float(attr.get("max", "nan"))
            if (lo, hi) != (layout.score_min, layout.score_max):
                raise UserError(f"label config control {name!r} has range [{lo}, {hi}], the project uses "
                                f"[{layout.score_min}, {layout.score_max}]")


def task_data(hit: dict, layout: Layout, rng: np.random.Generator) -> dict:
    """Label Studio task data for one HIT record, its items shown in a random order drawn from ``rng``.

    ``hit`` is a HIT record (``{"hit_id", "iteration", "items": [{"item_id", "text", ...}, ...]}``). The task
    keeps ``hit_id``, ``iteration``, ``item_ids`` in the order shown and ``permutation`` (``item_ids[j] =
    hit["items"][permutation[j]]["item_id"]``), so every score can be traced back to its item.
    """
    items = hit["items"]
    if len(items) != layout.n and layout.kind != "ranking":
        raise UserError(f"HIT {hit['hit_id']} has {len(items)} items, the label config shows {layout.n}")
    perm = rng.permutation(len(items))
    shown = [items[int(k)] for k in perm]
    data: dict = {
        "hit_id": str(hit["hit_id"]),
        "iteration": int(hit.get("iteration", 0)),
        "item_ids": [str(it["item_id"]) for it in shown],
        "permutation": [int(k) for k in perm],
    }
    if layout.kind == "ranking":
        data["items"] = [{"id": f"i{j}", "title": str(it.get("text", "")), "body": ""} for j, it in enumerate(shown)]
    else:
        for j, it in enumerate(shown):
            data[f"text_{j}"] = str(it.get("text", ""))
    return data


def shipped_xml(name: str) -> str:
    """Text of a config shipped in this folder (``easl_hit_5.xml``, ``da.xml``, ``ra_ranking_5.xml``,
    ``ra_pairwise.xml``)."""
    return (XML_DIR / name).read_text()


SHIPPED = {
    "easl_hit_5.xml": Layout("slider", 5),
    "da.xml": Layout("slider", 1),
    "ra_ranking_5.xml": Layout("ranking", 5),
    "ra_pairwise.xml": Layout("pairwise", 2),
}
