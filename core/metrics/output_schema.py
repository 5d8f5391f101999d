"""The versions of the ``easl evaluate --json`` object: RSMTool's names beside ours, and the layout of schema 1.

The object carries ``schema_version``; it changes whenever a key moves, is renamed or changes meaning (additions
that leave every existing key as it was keep the version). The JSON Schema of the current version ships with the
package (``core/metrics/evaluation.schema.json``, :func:`schema_path`); ``docs/reference/outputs.md`` documents
every key, and ``tests/test_output_schema.py`` freezes the key set of each version.

Versions
--------
1
    The layout of easl-toolkit 0.1.0 (which wrote no ``schema_version``): Cohen's kappa as ``kappa*``, Scott's pi
    as ``scott_pi*``, the all-raters coefficients under ``human_human.all_raters``, Fisher/analytic intervals as
    ``analytic_ci.<metric>`` pairs, the human-human bootstrap intervals as ``human_human_ci``, and
    ``n_responses`` the responses kept after the drops. ``easl evaluate --json --schema 1`` writes it, for
    scripts written against 0.1.0.
2
    The current layout: Conger's (Cohen's) kappa as ``conger_kappa*`` and Scott's pi / Fleiss' kappa as
    ``fleiss_kappa*`` (irrCAC's names), the all-raters block at the top level (``all_raters``), analytic
    intervals as ``analytic.<metric> = {se, ci, p_value, method}``, ``n_responses`` the responses compared with
    the first (reference) human column and ``n_input`` the rows read. RSMTool's own names (:data:`RSMTOOL_NAMES`)
    appear beside ours in every observed, degradation and human-human block.
3
    Version 2 and ``raters``: how a project's human raters were built (``easl evaluate --project``: ``against``,
    ``calibration``, the annotators ``excluded`` with their flag and reason, the ``repeated_ratings`` and their
    rule), null for a file. For a project, the human columns hold annotator-corrected scores on an annotator-aware
    project, without the annotators flagged ``random``, each rater's repeated ratings of an item averaged (version
    2: every annotator, the ratings as given, the first of repeated ratings). ``--schema 2`` leaves ``raters`` out.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

#: Version of the JSON object written by :meth:`core.metrics.results.Evaluation.to_json`.
SCHEMA_VERSION = 3

#: Versions ``easl evaluate --schema`` can write.
SCHEMA_VERSIONS: tuple[int, ...] = (1, 2, 3)

#: Our key -> RSMTool's name for the same figure (RSMTool 12.0.0, ``rsmtool.utils.metrics`` and the ``eval``,
#: ``consistency`` and ``degradation`` tables; ``docs/design.md``, "Evaluation metrics"). Conger's kappa of two
#: raters is Cohen's kappa, RSMTool's ``kappa``; our ``qwk`` is RSMTool's continuous ``wtkappa``.
RSMTOOL_NAMES: dict[str, str] = {"conger_kappa": "kappa", "qwk": "wtkappa", "smd": "SMD", "rmse": "RMSE", "r2": "R2"}

_RSMTOOL_ADDED = frozenset(RSMTOOL_NAMES.values()) | {f"{v}_reason" for v in RSMTOOL_NAMES.values()}

#: Schema 2 key prefix -> schema 1 key prefix (the chance-corrected family's old names).
_SCHEMA_1_PREFIXES: tuple[tuple[str, str], ...] = (("conger_kappa", "kappa"), ("fleiss_kappa", "scott_pi"))


def schema_path() -> Path:
    """The JSON Schema (draft 2020-12) of the current version, shipped as package data."""
    return Path(__file__).with_name("evaluation.schema.json")


def with_rsmtool_names(block: dict[str, Any]) -> dict[str, Any]:
    """``block`` with RSMTool's name beside each figure that has one (its value and its ``_reason``).

    Examples
    --------
    >>> with_rsmtool_names({"qwk": 0.5, "smd": None, "smd_reason": "constant"})
    {'qwk': 0.5, 'smd': None, 'smd_reason': 'constant', 'wtkappa': 0.5, 'SMD': None, 'SMD_reason': 'constant'}
    """
    out = dict(block)
    for ours, theirs in RSMTOOL_NAMES.items():
        if ours in block:
            out[theirs] = block[ours]
            if f"{ours}_reason" in block:
                out[f"{theirs}_reason"] = block[f"{ours}_reason"]
    return out


def as_schema(data: dict[str, Any], version: int) -> dict[str, Any]:
    """The evaluation object ``data`` (current schema) in the layout of ``version``."""
    if version == SCHEMA_VERSION:
        return data
    if version not in SCHEMA_VERSIONS:
        raise ValueError(f"schema version {version} is not one of {SCHEMA_VERSIONS}")
    two = {k: v for k, v in data.items() if k != "raters"} | {"schema_version": 2}
    return two if version == 2 else _schema_1(two)


def _old_name(key: str) -> str:
    if key.startswith("degradation_"):  # the degradation block's intervals sit beside the system's own
        return "degradation_" + _old_name(key[len("degradation_") :])
    for new, old in _SCHEMA_1_PREFIXES:
        if key == new or key.startswith(new + "_"):
            return old + key[len(new) :]
    return key


def _old_block(block: dict[str, Any]) -> dict[str, Any]:
    """A metric block with the chance-corrected family's 0.1.0 names and without RSMTool's added names."""
    out: dict[str, Any] = {}
    for key, value in block.items():
        if key in _RSMTOOL_ADDED:  # schema 1 had no RSMTool names (its ``kappa`` is ``conger_kappa`` renamed)
            continue
        out[_old_name(key)] = {_old_name(k): v for k, v in value.items()} if key == "ci" else value
    return out


def _analytic_ci(analytic: dict[str, Any]) -> dict[str, Any]:
    return {_old_name(k): v.get("ci") for k, v in analytic.items()}


def _schema_1(data: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(data)
    out: dict[str, Any] = {"schema_version": 1}
    dropped = sum(int(v) for v in data.get("dropped", {}).values())
    out["n_responses"] = int(data["n_input"]) - dropped
    out["n_input"] = data["n_input"]
    out["n_dropped"] = dropped
    out.update({key: data[key] for key in ("dropped", "scale", "human_columns", "confidence", "bootstrap")})
    hh = data["human_human"]
    hh.pop("analytic", None)
    hh_ci = hh.pop("ci", {})
    out["human_human"] = _old_block(hh)
    if hh_ci:
        out["human_human_ci"] = {_old_name(k): v for k, v in hh_ci.items()}
    if data.get("all_raters") is not None:
        all_raters = data["all_raters"]
        all_raters.pop("benchmark", None)
        analytic_ci = _analytic_ci(all_raters.pop("analytic", {}))
        out["human_human"]["all_raters"] = {**_old_block(all_raters), "analytic_ci": analytic_ci}
    systems = {}
    for name, entry in data["systems"].items():
        systems[name] = {
            "observed": _old_block(entry["observed"]),
            "true_score": entry["true_score"],
            "degradation": _old_block(entry["degradation"]),
            "disattenuated_corr": entry["disattenuated_corr"],
            "ci": {_old_name(k): v for k, v in entry["ci"].items()},
            "analytic_ci": _analytic_ci(entry.get("analytic", {})),
        }
        if "disattenuated_corr_reason" in entry:
            systems[name]["disattenuated_corr_reason"] = entry["disattenuated_corr_reason"]
    out["systems"] = systems
    out["subgroups"] = {
        g: {label: {s: _old_block(b) for s, b in per.items()} for label, per in by_label.items()}
        for g, by_label in data["subgroups"].items()
    }
    out["fairness"] = data["fairness"]
    out["notes"] = data["notes"]
    return out
