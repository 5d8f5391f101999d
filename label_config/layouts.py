"""Label Studio label configs (XML) for each annotation mode, and how a task's data is laid out for them.

Three layouts (``docs/design.md`` section 7.5, "Label config for n items scored 0-100"):

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

from easl_toolkit.core.errors import EaslError

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
            raise EaslError(f"label layout {self.kind!r} is unknown; choose one of {', '.join(LAYOUTS)}")
        if self.n < 1 or (self.kind == "pairwise" and self.n != 2) or (self.kind == "ranking" and self.n < 2):
            raise EaslError(f"label layout {self.kind!r} cannot show {self.n} items per task")
        if not np.isfinite(self.score_min) or not np.isfinite(self.score_max) or self.score_max <= self.score_min:
            raise EaslError(f"score range [{self.score_min}, {self.score_max}] is not a valid range")

    def control_names(self) -> list[str]:
        """Names of the control tags whose results carry the scores."""
        if self.kind == "slider":
            return [f"score_{j}" for j in range(self.n)]
        return ["rank"] if self.kind == "ranking" else ["choice"]

    def to_dict(self) -> dict:
        """JSON-able form (kept in the project file's meta table)."""
        return {"kind": self.kind, "n": self.n, "score_min": self.score_min, "score_max": self.score_max}

    @classmethod
    def from_dict(cls, d: dict) -> Layout:
        """Inverse of ``to_dict``."""
        return cls(kind=str(d["kind"]), n=int(d["n"]), score_min=float(d["score_min"]), score_max=float(d["score_max"]))


def layout_for(answer: str, hit_size: int, score_min: float, score_max: float) -> Layout:
    """The layout of a task by what the model asks of an annotator (``core.models.Model.answer``): a slider for
    each of a HIT's items (EASL, TrueSkill, DA, aware, evaluation campaigns), or a ranking for the order of a HIT's
    items (RA, which consumes only the pairwise order of a HIT's scores, eq 13; with two items per HIT the ranking
    becomes a pairwise choice)."""
    if answer == "ranking":
        return Layout("pairwise" if hit_size == 2 else "ranking", hit_size, score_min, score_max)
    return Layout("slider", hit_size, score_min, score_max)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


#: Styling of the slider layout (``<Style>``): every row a grid of text | low label | slider | value | high label,
#: so that all sliders have the same width and line up; an unset slider shows no thumb and says "not set"
#: (its ``<output>`` is empty until a value is set; Label Studio's Number renders ``<input type=range>`` then
#: ``<output>``). Selectors are scoped by the ``easl-`` classes of the config's own Views.
SLIDER_STYLE = """
.easl-question h1, .easl-question h2, .easl-question h3, .easl-question h4 { margin: 0.25em 0 0.5em; }
.easl-item { display: grid; grid-template-columns: minmax(12em, 1fr) 38em; gap: 1em; align-items: center;
  padding: 0.6em 0; border-bottom: 1px solid #e4e4e4; }
.easl-scale { display: grid; grid-template-columns: 10em 18em 10em; gap: 0.5em; align-items: center; }
.easl-scale h1, .easl-scale h2, .easl-scale h3, .easl-scale h4, .easl-scale h5, .easl-scale h6 {
  margin: 0 !important; font-size: 13px !important; line-height: 1.25 !important; font-weight: 400 !important;
  color: #555 !important; }
.easl-low h1, .easl-low h2, .easl-low h3, .easl-low h4, .easl-low h5, .easl-low h6 { text-align: right; }
.easl-scale input[type=range] { width: 13em !important; margin: 0; cursor: pointer; }
.easl-scale output { display: inline-block; min-width: 3.5em; margin-left: 0.5em !important;
  font-variant-numeric: tabular-nums; font-weight: 600; }
.easl-scale output:empty::after { content: "not set"; font-weight: 400; color: #b3261e; font-size: 0.85em; }
.easl-scale div:has(output:empty) input[type=range] { opacity: 0.5; filter: grayscale(1);
  background: #e4e4e4 !important; }
.easl-scale div:has(output:empty) input[type=range]::-webkit-slider-thumb { opacity: 0 !important;
  visibility: hidden !important; }
.easl-scale div:has(output:empty) input[type=range]::-moz-range-thumb { opacity: 0 !important; }
.easl-scale div:has(output:empty) input[type=range]::-webkit-slider-runnable-track { background: #e4e4e4 !important; }
.easl-scale div:has(output:empty) input[type=range]::-moz-range-progress { background: #e4e4e4 !important; }
"""


def label_config(
    layout: Layout,
    *,
    instructions: str | None = None,
    question: str | None = None,
    low_label: str | None = None,
    high_label: str | None = None,
) -> str:
    """The Label Studio label config (XML) for ``layout``.

    ``question`` (what annotators are asked) is shown above the HIT; ``low_label`` / ``high_label`` (what the ends
    of the score range mean) beside the two ends of every slider (default: the range's numbers). ``instructions``
    is the older name of ``question``.
    """
    lo, hi = _num(layout.score_min), _num(layout.score_max)
    question = question or instructions
    if layout.kind == "slider":
        scale = f"from {lo} to {hi}"
        header = question or (f"Score each text {scale}" if layout.n > 1 else f"Score the text {scale}")
        low = f"{lo} = {low_label}" if low_label else lo
        high = f"{hi} = {high_label}" if high_label else hi
        rows = []
        for j in range(layout.n):
            rows.append(
                '  <View className="easl-item">\n'
                f'    <Text name="text_{j}" value="$text_{j}"/>\n'
                '    <View className="easl-scale">\n'
                f'      <View className="easl-low"><Header value={quoteattr(low)} size="6" underline="false"/></View>\n'
                f'      <Number name="score_{j}" toName="text_{j}" min="{lo}" max="{hi}" step="1" slider="true"'
                f' required="true" requiredMessage={quoteattr(f"Text {j + 1} has no score yet: set its slider.")}/>\n'
                f'      <View className="easl-high"><Header value={quoteattr(high)} size="6" underline="false"/>'
                "</View>\n"
                "    </View>\n"
                "  </View>\n"
            )
        body = "".join(rows)
        style = f"  <Style>{SLIDER_STYLE}</Style>\n"
        head = f'  <View className="easl-question"><Header value={quoteattr(header)}/></View>\n'
        if question:
            head += f'  <Header value={quoteattr(f"Scores {scale}: {low} ... {high}")} size="6"/>\n'
        return f"<View>\n{style}{head}{body}</View>\n"
    elif layout.kind == "ranking":
        header = question or "Order the texts from highest (top) to lowest (bottom)"
        body = '  <List name="items" value="$items" title="Texts"/>\n  <Ranker name="rank" toName="items"/>\n'
    else:
        header = question or "Which text scores higher?"
        body = (
            '  <Text name="text_0" value="$text_0"/>\n'
            '  <Text name="text_1" value="$text_1"/>\n'
            '  <Pairwise name="choice" toName="text_0,text_1"/>\n'
        )
    return f"<View>\n  <Header value={quoteattr(header)}/>\n{body}</View>\n"


def validate_label_config(xml: str, layout: Layout) -> None:
    """Check ``xml`` with the SDK's label interface and that it has the controls ``layout`` needs.

    Raises ``EaslError`` naming the first missing or mismatched control.
    """
    from label_studio_sdk.label_interface.interface import LabelInterface

    try:
        li = LabelInterface(xml)
    except Exception as exc:  # the SDK raises several parser errors; all mean the same to the user
        raise EaslError(f"label config is not valid Label Studio XML: {exc}") from exc
    controls = {c.name: c for c in li.controls}
    want_tag = {"slider": "Number", "ranking": "Ranker", "pairwise": "Pairwise"}[layout.kind]
    for name in layout.control_names():
        if name not in controls:
            raise EaslError(f"label config has no control named {name!r} (needed by the {layout.kind} layout)")
        if controls[name].tag != want_tag:
            raise EaslError(f"label config control {name!r} is a <{controls[name].tag}>, expected <{want_tag}>")
        if layout.kind == "slider":
            attr = controls[name].attr
            lo, hi = float(attr.get("min", "nan")), float(attr.get("max", "nan"))
            if (lo, hi) != (layout.score_min, layout.score_max):
                raise EaslError(
                    f"label config control {name!r} has range [{lo}, {hi}], the project uses "
                    f"[{layout.score_min}, {layout.score_max}]"
                )


def task_data(hit: dict, layout: Layout, rng: np.random.Generator) -> dict:
    """Label Studio task data for one HIT record, its items shown in a random order drawn from ``rng``.

    ``hit`` is a HIT record (``{"hit_id", "iteration", "items": [{"item_id", "text", ...}, ...]}``). The task
    keeps ``hit_id``, ``iteration``, ``item_ids`` in the order shown and ``permutation`` (``item_ids[j] =
    hit["items"][permutation[j]]["item_id"]``), so every score can be traced back to its item.
    """
    items = hit["items"]
    if len(items) != layout.n and layout.kind != "ranking":
        raise EaslError(f"HIT {hit['hit_id']} has {len(items)} items, the label config shows {layout.n}")
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
    """Text of a config shipped in this folder (``easl_hit_5.xml``, ``ra_ranking_5.xml``, ``ra_pairwise.xml``)."""
    return (XML_DIR / name).read_text()


SHIPPED = {
    "easl_hit_5.xml": Layout("slider", 5),
    "ra_ranking_5.xml": Layout("ranking", 5),
    "ra_pairwise.xml": Layout("pairwise", 2),
}
