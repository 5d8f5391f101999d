"""Real human ratings shipped in the package (``core/data/agh_tv_quality_2017/``).

The AGH TV video-quality study (2017): 320 processed video sequences (20 source contents x 16 conditions), each
rated for quality on the ACR 1-5 scale by 48-99 of 99 lab subjects, 17,820 ratings in long form. Source: the
public repository Netflix/sureal, ``test/resource/quality_variation_2017_agh_tv_dataset.py`` (commit
526715c9d94ec02367e61ef980b94b8c886e4022), Apache-2.0; the licence text and notice ship beside the data
(``core/data/agh_tv_quality_2017/LICENSE`` and ``NOTICE.md``), and its ``README.md`` gives the provenance and
the figures of the data.

Used by ``easl simulate replay`` (:mod:`core.simulate.replay`) and ``easl demo``.

WMT23 English-German MQM (``core/data/wmt23_mqm_ende/``): 936 machine translations, each scored by 3 of 10
professional translators (minus the MQM penalty) and by a real automatic metric (sentence chrF against the
reference, mapped to the human scale). Source: the public repository google/wmt-mqm-human-evaluation (commit
cb2424193dfa00e7e94917366c1c72faa3512433), Apache-2.0; the folder's ``README.md`` gives the provenance, the
scoring and the figures. Used by ``easl simulate campaign`` (:mod:`core.simulate.campaign_replay`).

MLQE-PE Romanian-English (``core/data/mlqe_pe_roen/``): 1,000 machine translations of the MLQE-PE test set, each
given six direct-assessment scores (0-100) by human annotators and scored by the NMT model that produced it (its
mean token log-probability, mapped to the human scale). Source: the public repository sheffieldnlp/mlqe-pe
(commit 2a670a1140416cf80507b5a829659383c878feb8), CC0 1.0; the folder's ``README.md`` gives the provenance, the
scoring and the figures. Used by ``easl simulate campaign --dataset mlqe_pe_roen``.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from easl_toolkit.core.errors import InputError

#: The study's folder inside the package.
AGH_TV = "agh_tv_quality_2017"
#: Its score range (ACR: 1 bad .. 5 excellent).
AGH_TV_SCALE = (1.0, 5.0)


#: The WMT23 MQM set's folder inside the package.
WMT23_MQM = "wmt23_mqm_ende"
#: The MLQE-PE Romanian-English set's folder inside the package.
MLQE_PE_ROEN = "mlqe_pe_roen"
#: The shipped sets of human scores with a real system's scores (``easl simulate campaign --dataset``); the first
#: is the default.
CAMPAIGN_SETS = (WMT23_MQM, MLQE_PE_ROEN)


def _read(name: str, folder: str = AGH_TV, **kw: Any) -> Any:
    import pandas as pd

    with resources.as_file(resources.files("easl_toolkit.core") / "data" / folder / name) as path:
        return pd.read_csv(path, **kw)


def agh_tv_ratings() -> Any:
    """The study's ratings as a ``pandas.DataFrame`` with ``item_id`` (str), ``annotator_id`` (str) and
    ``score`` (float64, 1-5): one row per individual rating."""
    return _read("ratings.csv", dtype={"item_id": str, "annotator_id": str, "score": "float64"})


def agh_tv_items() -> Any:
    """The study's items: ``item_id`` (str), ``content_id``, ``path`` (the video's file name), ``n_ratings``; the
    ``text`` column shown to annotators is the file name."""
    frame = _read("items.csv", dtype={"item_id": str})
    return frame.assign(text=frame["path"])


def agh_tv_notice() -> str:
    """The source and licence notice to show beside any use of the data."""
    return (
        "AGH TV video-quality study (2017), 99 lab subjects, ACR 1-5; from Netflix/sureal "
        "(test/resource/quality_variation_2017_agh_tv_dataset.py), Apache-2.0: core/data/agh_tv_quality_2017/LICENSE"
    )


def wmt23_mqm_ratings() -> Any:
    """The WMT23 MQM set as a ``pandas.DataFrame``, one row per translation (936 rows): ``response_id`` (str),
    ``mt_system``, ``doc``, ``paragraph``, ``system`` (the scoring system: chrF on the human scale), ``chrf``,
    ``human_1`` .. ``human_3`` (float64, minus the MQM penalty, 0 = no error) and ``rater_1`` .. ``rater_3``."""
    return _read("ratings.csv", WMT23_MQM, dtype={"response_id": str, "doc": str, "mt_system": str})


def wmt23_mqm_notice() -> str:
    """The source and licence notice to show beside any use of the WMT23 MQM set."""
    return (
        "WMT23 English-German MQM, 3 professional raters per translation, system: sentence chrF; from "
        "google/wmt-mqm-human-evaluation, Apache-2.0: core/data/wmt23_mqm_ende/LICENSE"
    )


def mlqe_pe_roen_ratings() -> Any:
    """The MLQE-PE Romanian-English set as a ``pandas.DataFrame``, one row per translation (1,000 rows):
    ``response_id`` (str), ``doc`` (the Wikipedia article of the source sentence), ``system`` (the scoring system:
    the NMT model's mean token log-probability on the human scale), ``model_score`` (that log-probability) and
    ``human_1`` .. ``human_6`` (float64, direct assessment 0-100)."""
    humans = {f"human_{k}": "float64" for k in range(1, 7)}
    return _read("ratings.csv", MLQE_PE_ROEN, dtype={"response_id": str, "doc": str, **humans})


def mlqe_pe_roen_notice() -> str:
    """The source and licence notice to show beside any use of the MLQE-PE Romanian-English set."""
    return (
        "MLQE-PE Romanian-English test set, 6 direct-assessment scores per translation, system: the NMT model's "
        "mean token log-probability; from sheffieldnlp/mlqe-pe, CC0 1.0: core/data/mlqe_pe_roen/LICENSE"
    )


def _campaign_set(name: str) -> tuple[Any, Any]:
    loaders = {
        WMT23_MQM: (wmt23_mqm_ratings, wmt23_mqm_notice),
        MLQE_PE_ROEN: (mlqe_pe_roen_ratings, mlqe_pe_roen_notice),
    }
    if name not in loaders:
        raise InputError(f"no shipped set {name!r}; choose from {', '.join(CAMPAIGN_SETS)}")
    return loaders[name]


def campaign_ratings(name: str) -> Any:
    """The ratings frame of the shipped set ``name`` (one of :data:`CAMPAIGN_SETS`)."""
    return _campaign_set(name)[0]()


def campaign_notice(name: str) -> str:
    """The source and licence notice of the shipped set ``name`` (one of :data:`CAMPAIGN_SETS`)."""
    return str(_campaign_set(name)[1]())
