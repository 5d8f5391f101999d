"""``easl export`` writes the same bytes as before its speed-ups: the SHA-256 of every file it writes
for small projects of each method, in each format, pinned from the code before the changes; and the parts of the
speed-ups checked against what they replace: :func:`core.store.arrow_columns.write_csv` against Arrow's CSV writer
(property test), the distinct pairs of :func:`core.models.beta.beta_interval` against SciPy.

The files are built by Arrow's CSV writer, pandas' JSON writer and Parquet writer (whose footer names the Arrow
version), so the digests hold for the library versions they were taken with (``VERSIONS``); with others those tests
are skipped with a message naming them (``test_store_columns`` still checks the CSV against the DataFrame's bytes).
"""

from __future__ import annotations

import hashlib
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.models import Hyper
from core.models.beta import beta_interval
from core.store import Project, arrow_columns
from tests.store_helpers import answer, make_items
from tui.cli import main

#: the versions of the libraries that write the files when the digests were taken
VERSIONS = {"numpy": "2.2.6", "scipy": "1.17.1", "pandas": "3.1.1", "pyarrow": "26.0.1"}

#: (project, file) -> SHA-256 of the file's bytes, from the code before the export's speed-ups
#: (the estimates of easl-plain-5000, easl-extra, trueskill-plain and aware-plain re-pinned when estimates and
#: intervals were kept on the score range: core/models/aware_scale.py, EASL's interval widened to its mode; every file
#: of aware-plain when the annotators' noise shrinkage became empirical Bayes, which changes its fit and so its HITs,
#: and the annotator file gained p_random and scatter; aware-plain and trueskill-plain again when the tie-breaking
#: component of core/models/aware_scale.py became a wide uniform noise and the noise strengths are evaluated at
#: sweeps 1, 2, 4, ...)
DIGESTS: dict[tuple[str, str], str] = {
    ("easl-plain-rounded", "est.csv"): "8b0b708f2202df59383e825077a9caed30c4a866d3a02384673af089e0b6e63c",
    ("easl-plain-rounded", "rat.csv"): "0201e321c26e30ce6194f73c7361bcf2bd541558341a14e633d633aaccab7b2d",
    ("easl-plain-rounded", "est.jsonl"): "275259801b77d4ae467d0283e57f61e58ee4ad929e70a8102124b92120188497",
    ("easl-plain-rounded", "rat.jsonl"): "bb080941c4314740790c16131f22d3d0d1c5188b5b8d855455fab78984265e73",
    ("easl-plain-rounded", "est.parquet"): "2564b9583fd1faaf71264013a83a073fff5990024e89c14aeb73fc68dc1e005d",
    ("easl-plain-rounded", "rat.parquet"): "ceaea9d6791127d9aad683da183c3e06667f3887664f72d30941b2a67e62ed95",
    ("easl-plain-fine", "est.csv"): "eb72a3b9117da05aafc3023b1183b34189bbf2ee17bef56a90838880c7109b76",
    ("easl-plain-fine", "rat.csv"): "9e072310c12794c7106eea5840187d070774fbbb5c6e469408e97177416b5b1b",
    ("easl-plain-fine", "est.jsonl"): "09b77e07cf3e38c111160337e962f08b3dba2d681cab3db43ed37b95b448d087",
    ("easl-plain-fine", "rat.jsonl"): "3d45de556b9af4dd166ec45613391f5318f26da2670ca41f3aa0807ef6d6897a",
    ("easl-plain-fine", "est.parquet"): "3fdd2e03e02d41dffdbfbb9ddb75bbbed72da4498f50ee2e07082a1b31be03d4",
    ("easl-plain-fine", "rat.parquet"): "bb88b312e209f5d939fe945ffe6b512f1efdb2aca28ddcc0ace2dea1410688eb",
    ("easl-plain-5000", "est.csv"): "4a3d7e3b79eac69f475dd07ce6fb85f61d8fc9e7025f27be1bfe909a6587d5f0",
    ("easl-plain-5000", "rat.csv"): "1e091ee4021c228976d4eb0881276b2c8e748866c7566a2720c34d7bfa836c1d",
    ("easl-plain-5000", "est.jsonl"): "1b739450157339f52734638b1ca5c44f568bbe6c9039df7e3ba90db852782977",
    ("easl-plain-5000", "rat.jsonl"): "ded0beab08a2c14576825167fce21e72b40a4af601a51e3750f87898e2b8038c",
    ("easl-plain-5000", "est.parquet"): "983b918a1c9bb216ced467f6af22b8c00d191f26bd55b1dd98ec8ba789405f4d",
    ("easl-plain-5000", "rat.parquet"): "3c4afa75bb94ff2601a40a9336a4c23b63cc244b44bfed594a5454fe3954139f",
    ("easl-extra", "est.csv"): "a07ecdd4f2a728bcdd385d80dcfc85648dcf811c892436d715b15444ce4ccd40",
    ("easl-extra", "rat.csv"): "45043dd680b8dd2c1174cc1ab453bd19bca3b73f2d4bd7a49535ff6f4b9b333e",
    ("easl-extra", "est.jsonl"): "049b77a1f7abb460f4ce7967b60e6b2c3a0adb8d77acc3ce3361de3cca67e14f",
    ("easl-extra", "rat.jsonl"): "5c0c35f52cb9759e1bb5beed599e9b9fee05c599ce4b40313d32fdb585dee5cc",
    ("easl-extra", "est.parquet"): "1edbdd67e7d1df20fe0b5b470f3017ee4ddb64bb4394daaa9c08d176ee1d96b4",
    ("easl-extra", "rat.parquet"): "ae24110818a9894459adb4884f845a174bd430a1cd90e8edf5058d91a0c2e915",
    ("ra-plain", "est.csv"): "fdb2fb970400c289f3d8ffe529325fc0945c3464e527aae1df2b7a529244bde2",
    ("ra-plain", "rat.csv"): "436734d7cff4df89b787b02e6eae449531358f37a334332b63c0ad23969a6eb8",
    ("ra-plain", "est.jsonl"): "78e7cdf5446b4089762817b4c05c3c34c7ef0cdd97ffad138ed58bdae9137198",
    ("ra-plain", "rat.jsonl"): "b9ff6351eed8cd680546a972774f034eab9ef35acb45855f05571916cefad4d0",
    ("ra-plain", "est.parquet"): "e6c984b282c5ec2f9f9ef564bd25a5f0ac080db89be155706f1c76cd9496bdfd",
    ("ra-plain", "rat.parquet"): "91eba584f8520887c0e773369bb4aba4d83e3494846fc3a0814ce90dd7c7cc99",
    ("trueskill-plain", "est.csv"): "8efe7df40b872ff3d24e7e3dc4c7971f010dcecbee46e89dc5962fa7e53ca589",
    ("trueskill-plain", "rat.csv"): "306b9da1f03e5c2b02cd3f7776148d3ed3fc16b785afafb1c06ba9af7c7b3875",
    ("trueskill-plain", "est.jsonl"): "9edb4e7b496c0f7f0febe1f46f438e80fe286ce71319280715adb9c07255e7a0",
    ("trueskill-plain", "rat.jsonl"): "898b45dc764566baf8787cbcd8d9853b395e41dcc2013ab19512fe1c20c2ff35",
    ("trueskill-plain", "est.parquet"): "ccc7f636c686f8bcfcc98317d9fc45487c15a33a91dac93370dc81c891c376c6",
    ("trueskill-plain", "rat.parquet"): "4560d64ba9907d2d9b6234dbf4a7716e0d976a6d781c5ef1ad2a7e481dd5752d",
    ("da-plain", "est.csv"): "28f2a384268c05869648f2ea5543add57087062961e0393930be08118f6c6dd6",
    ("da-plain", "rat.csv"): "2217cd1cb0f4a476498ccbbdfaef7a1c551da09e4403f47a859e21af51bd3274",
    ("da-plain", "est.jsonl"): "67c4c0271cd8e3d795fe537b5a8c156bedc09840c151afd43f8259f3c088a475",
    ("da-plain", "rat.jsonl"): "cfac84a81d250135302dc67f6d7bb37b6c0487f8c0cd23764d820ef0b720de42",
    ("da-plain", "est.parquet"): "937ba450cea9361ddc62c92c72f16b039a5770c5ee8c6fb793e5df1b73d45d31",
    ("da-plain", "rat.parquet"): "65e2fc3d67546e0c4723aceab5a41ee7aa4a5a6c3f153ee4fea6a26619a2af17",
    ("aware-plain", "est.csv"): "c60a3365f93986cf8198146d9782a2231a465bede45dc4f6140d3daafef58a8a",
    ("aware-plain", "rat.csv"): "435bdc407637214701a781132bc8ec0d3be54c4bd18d6366ae157b77e0f1754a",
    ("aware-plain", "ann.csv"): "a48cc54e0599cb1b30646ab23c49376a28784679b32abca58308f525cb70f687",
    ("aware-plain", "est.jsonl"): "a10ef07f2a29d8326c45f2b5ffad756afeda59fdc45871ddcb53eb3d4ab1daaf",
    ("aware-plain", "rat.jsonl"): "56a2f60f2174575599b51354e0ed1657ad60a2fd018462506c1a047711fe3e03",
    ("aware-plain", "ann.jsonl"): "939abeb688dae8e575e4a4dc50a8014582a4f3ed0c8187c24ea0e8b6d0def147",
    ("aware-plain", "est.parquet"): "f702788f82a99c475ab0ddc432fc0ce761a851484c99bdb4c08bc2ddb8ea9a9e",
    ("aware-plain", "rat.parquet"): "4548b38c5369841f0742bd216ad752a0a7f7fe8ec4bf63b55b1cd30a652ebf6d",
    ("aware-plain", "ann.parquet"): "f9b7f09eee93b45ec9a147119f700238f584c9a675e8e1140c3c1f4eb9163cf3",
}

#: project name -> (method, items, items with extra columns, scores rounded to integers, annotators, texts with a
#: backslash: JSON escapes)
PROJECTS = {
    "easl-plain-rounded": ("easl", 150, False, True, 1, False),
    "easl-plain-fine": ("easl", 150, False, False, 1, True),
    "easl-plain-5000": ("easl", 5000, False, True, 1, False),
    "easl-extra": ("easl", 150, True, True, 1, True),
    "ra-plain": ("ra", 150, False, True, 1, False),
    "trueskill-plain": ("trueskill", 150, False, False, 1, False),
    "da-plain": ("da", 150, False, False, 1, True),
    "aware-plain": ("aware", 150, False, True, 3, False),
}


def _items(n: int, extra: bool, backslash: bool) -> pd.DataFrame:
    """``n`` items whose texts hold what CSV and JSON must escape (quotes, commas, new lines, a tab, non-ASCII
    characters; with ``backslash`` a backslash), and an empty one."""
    items = make_items(n, extra=extra)
    items.loc[3, "text"] = 'a "quoted", text\nover two lines'
    items.loc[4, "text"] = ("back\\slash and " if backslash else "") + "tab\t"
    items.loc[5, "text"] = "naïve café – 東京"
    items.loc[6, "text"] = ""
    return items


def _build(tmp_path: Path, name: str) -> str:
    """The project ``name`` of ``PROJECTS`` after two iterations of answers, with fixed creation times."""
    method, n, extra, rounded, n_annotators, backslash = PROJECTS[name]
    path = tmp_path / f"{name}.easl"
    project = Project.create(
        path, _items(n, extra, backslash), Hyper(method=method, hit_size=5, seed=7, score_min=1, score_max=5)
    )
    rng = np.random.default_rng(11)
    try:
        for it in range(2):
            hits = project.next_hits()
            frames = [
                answer(hits, rng, annotator=f"ann{k}", with_annotation_id=True, score_max=4)
                for k in range(n_annotators)
            ]
            rows = pd.concat(frames, ignore_index=True)
            if rounded:
                rows["score"] = rows["score"].round()
            rows["score"] += 1
            rows["created_at"] = f"2026-01-0{it + 1}T00:00:00+00:00"
            project.ingest(rows, source="digest")
    finally:
        project.close()
    return str(path)


def _digests(tmp_path: Path, name: str) -> dict[tuple[str, str], str]:
    project = _build(tmp_path, name)
    out: dict[tuple[str, str], str] = {}
    for ext in ("csv", "jsonl", "parquet"):
        est, rat = tmp_path / f"{name}-est.{ext}", tmp_path / f"{name}-rat.{ext}"
        args = ["export", project, "--output", str(est), "--ratings", str(rat)]
        if PROJECTS[name][0] == "aware":
            args += ["--annotators", str(tmp_path / f"{name}-ann.{ext}")]
        assert main(args) == 0
        for kind in ("est", "rat", "ann"):
            path = tmp_path / f"{name}-{kind}.{ext}"
            if path.exists():
                out[(name, f"{kind}.{ext}")] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.mark.parametrize("name", list(PROJECTS))
def test_export_writes_the_bytes_it_wrote_before(tmp_path: Path, name: str) -> None:
    found = {lib: version(lib) for lib in VERSIONS}
    if found != VERSIONS:
        pytest.skip(f"digests taken with {VERSIONS}; installed: {found}")
    got = _digests(tmp_path, name)
    expected = {key: value for key, value in DIGESTS.items() if key[0] == name}
    assert got == expected


@pytest.mark.parametrize("slice_rows", [1, 7, 1000])
@pytest.mark.parametrize("name", ["easl-plain-fine", "easl-plain-5000"])
def test_csv_formatted_in_slices_by_threads_is_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, slice_rows: int
) -> None:
    """``core.store.arrow_columns.write_csv`` formats a large table in slices, in threads: with slices of a few
    rows (the first shorter than the header, a last one partial) the file is the one written in one slice, with
    any library versions (and, with those of ``VERSIONS``, the one pinned above)."""
    project = _build(tmp_path, name)
    whole, sliced = tmp_path / "whole.csv", tmp_path / "sliced.csv"
    with monkeypatch.context() as patch:
        patch.setattr(arrow_columns, "CSV_SLICE_ROWS", 10**9)
        assert main(["export", project, "--output", str(whole)]) == 0
    monkeypatch.setattr(arrow_columns, "CSV_SLICE_ROWS", slice_rows)
    assert main(["export", project, "--output", str(sliced)]) == 0
    assert sliced.read_bytes() == whole.read_bytes()
    if {lib: version(lib) for lib in VERSIONS} == VERSIONS:
        assert hashlib.sha256(sliced.read_bytes()).hexdigest() == DIGESTS[(name, "est.csv")]


STRINGS = ["", "a", 'say "hi"', '""', "a,b", "line\nbreak", "cr\r", "naïve 東京", " spaced ", "back\\slash"]
NUMBERS: dict[str, list[float | None]] = {
    "int": [0, 1, -1, 7, 2**62, -(2**63)],
    "float": [
        0.0,
        -0.0,
        1.5,
        1 / 3,
        1e-300,
        1e300,
        123456789.125,
        float("inf"),
        float("-inf"),
        float("nan"),
        -float("nan"),
        None,
    ],
}


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    """Small tables of string, integer and float columns whose values repeat or not, with nulls, NaN, infinities
    and signed zeros."""
    n = draw(st.integers(1, 40))
    arrays, names = [], []
    for k in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["string", "int", "float"]))
        if kind == "string":
            texts: list[str | None] = STRINGS + ([None] if draw(st.booleans()) else [])
            values: list[str | float | None] = draw(st.lists(st.sampled_from(texts), min_size=n, max_size=n))
            arrays.append(pa.array(values, type=draw(st.sampled_from([pa.string(), pa.large_string()]))))
        else:
            pool = draw(st.lists(st.sampled_from(NUMBERS[kind]), min_size=1, max_size=4))
            if draw(st.booleans()):  # every value distinct: Arrow's writer
                pool += [k + 0.5 * j for j in range(n)] if kind == "float" else [float(10 + j) for j in range(n)]
            values = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
            if kind == "int":
                values = [None if v is None else int(v) for v in values]
            arrays.append(pa.array(values, type=pa.int64() if kind == "int" else pa.float64()))
        names.append(draw(st.sampled_from(["x", 'q"uote', "a,b", "é"])) + str(k))
    return pa.Table.from_arrays(arrays, names=names)


@settings(max_examples=300)
@given(table=tables(), slice_rows=st.integers(1, 9))
def test_write_csv_is_the_bytes_of_arrows_writer(
    tmp_path_factory: pytest.TempPathFactory, table: pa.Table, slice_rows: int
) -> None:
    """Whichever way :func:`core.store.arrow_columns.write_csv` formats a table (Arrow's writer at once or in
    slices), the file holds the bytes of Arrow's writer."""
    expected = pa.BufferOutputStream()
    pa_csv.write_csv(table, expected, write_options=pa_csv.WriteOptions(quoting_style="needed"))
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(arrow_columns, "CSV_SLICE_ROWS", slice_rows)
        arrow_columns.write_csv(table, path)
    assert path.read_bytes() == expected.getvalue().to_pybytes()


def test_beta_interval_of_repeated_pairs_is_the_interval_of_each() -> None:
    """The Beta interval evaluated once per distinct (alpha, beta) equals SciPy's of every row."""
    from scipy import special

    rng = np.random.default_rng(9)
    alpha = 1 + rng.integers(0, 5, size=5000) * 0.25
    beta = 1 + rng.integers(0, 5, size=5000) * 0.25
    low, high = beta_interval(alpha, beta)
    tail = (1.0 - 0.95) / 2.0
    assert np.array_equal(low, special.betaincinv(alpha, beta, tail))
    assert np.array_equal(high, special.betaincinv(alpha, beta, 1.0 - tail))
