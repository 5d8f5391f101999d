"""The peer-comparison suite: every number of irrCAC, krippendorff, scikit-learn, statsmodels,
SciPy and RSMTool on the shipped data equals ours, or differs for a documented reason.

The peers are not needed here: their numbers are frozen in ``tests/peers/expected.json`` by
``tests/peers/generate.py`` (see ``tests/peers/README.md``). ``python -m tests.peers.compare`` prints the table
of the README.
"""

import pytest

from tests.peers.compare import run, table


@pytest.fixture(scope="module")
def tally():
    return run()


def test_every_difference_from_a_peer_is_documented(tally):
    undocumented = [r for r in tally.records if not r.equal and not r.documented]
    assert not undocumented, "\n".join(
        f"{r.peer} {r.metric} {r.where}: ours {r.ours!r}, theirs {r.theirs!r}" for r in undocumented[:20]
    )


def test_every_peer_and_dataset_is_compared(tally):
    peers = {r.peer for r in tally.records}
    assert peers == {"irrCAC", "krippendorff", "scikit-learn", "statsmodels", "SciPy", "RSMTool"}
    where = {r.where.split(" ")[0] for r in tally.records if r.peer == "irrCAC"}
    assert {
        "raw_4raters",
        "raw_5observers",
        "raw_ben_gerry",
        "raw_g1g2",
        "raw_gender",
        "table_cont3x3abstractors",
        "table_cont4x4diagnosis",
        "dist_4cat",
        "dist_g1g2",
        "distrib_6raters",
    } <= where
    assert len(tally.records) >= 2800
    assert "| all |" in table(tally)
