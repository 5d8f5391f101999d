"""The CLI under abuse: no command can destroy a project, every bad input or damaged file is one located
sentence (never a traceback), a full disk leaves the project intact, and ingest streams in chunks.

The tests, by class of failure:

* the project destroyed by an output: ``test_export_refuses_the_project_file_by_any_name`` (same name,
  symlink, hard link, another spelling), ``test_export_refuses_the_wal_and_shm``,
  ``test_export_ratings_to_the_project_is_refused_before_writing_the_estimates``,
  ``test_ingest_rejects_to_the_project_is_refused_before_ingesting``, and for salvage
  ``test_verify_salvage_copies_every_readable_observation``;
* ``--rejects`` to a directory: ``test_ingest_rejects_to_a_directory_is_refused_before_ingesting``;
* a damaged page: ``test_every_command_words_a_damaged_file_as_one_sentence``,
  ``test_verify_reports_the_damaged_pages``, ``test_verify_salvage_copies_every_readable_observation``,
  ``test_a_file_that_is_not_a_database_is_one_sentence``, ``test_sqlite_errors_are_worded_by_kind``;
* tracebacks (CLI half): ``test_a_400_digit_score_is_a_located_error``,
  ``test_export_output_places_are_one_sentence``, ``test_evaluate_output_under_a_file_is_one_sentence``,
  ``test_simulate_out_under_a_file_is_one_sentence``, ``test_status_json_into_a_closed_pipe_is_quiet``,
  ``test_unexpected_error_is_one_line_with_a_debug_pointer``;
* half-done work: ``test_export_ratings_to_a_missing_directory_writes_neither``,
  ``test_failed_write_leaves_the_old_outputs``, ``test_export_same_file_twice_is_refused``;
* wrong acceptance: ``test_ids_must_be_strings_or_integers``,
  ``test_item_ids_of_init_must_be_strings_or_integers``, ``test_csv_fields_longer_than_131072_characters_are_read``;
* memory (correctness of the streaming ingest, with the live index kept chunk by chunk and built at the end as
  for large files; the figures are ``bench/bench_memory.py``'s):
  ``test_chunked_ingest_equals_one_batch``, ``test_a_bad_row_in_the_last_chunk_rolls_back_everything``,
  ``test_conflicts_across_chunks_are_found``, ``test_chunked_reading_keeps_lines_and_errors``;
* disk full: ``test_ingest_on_a_full_disk_fails_cleanly_and_leaves_the_project``,
  ``test_export_on_a_full_disk_fails_cleanly_and_writes_nothing``.

A second round, by class of input (each refusal one located sentence, exit 1, nothing written):

* evaluation inputs that cannot mean anything: ``test_evaluate_refuses_a_column_named_twice``,
  ``test_evaluate_refuses_a_population_smaller_than_the_sample``,
  ``test_evaluate_refuses_scores_that_overflow_and_warns_nothing``;
* identity and provenance: ``test_ids_that_differ_only_in_unicode_normalisation_are_one_id``,
  ``test_control_characters_in_ids_are_refused``, ``test_control_characters_in_item_ids_of_init_are_refused``,
  ``test_created_at_must_be_an_iso_8601_timestamp``, ``test_a_jsonl_object_with_a_repeated_key_is_refused``,
  ``test_a_key_missing_from_some_jsonl_records_keeps_the_integers``;
* cells a spreadsheet would execute: ``test_cells_a_spreadsheet_would_execute_are_neutralised_by_default``,
  ``test_neutralised_cells_are_restored_exactly``;
* inputs that never end (a FIFO, a link to a device, a directory; init, ingest, evaluate, simulate replay):
  ``test_inputs_that_are_not_regular_files_are_refused_at_once``;
* unclear messages and leftovers: ``test_a_tsv_that_is_comma_separated_says_so``,
  ``test_leftovers_of_killed_commands_are_removed_at_the_next_run``.

Most run ``tui.cli.main`` in-process; the ones about exit codes, pipes, file-size limits and stderr run the real
CLI in a subprocess. The service's half (tracebacks, connections that never finish, the log) is in
``tests/test_service_faults.py``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.store import Project
from easl_toolkit.tui.cli import main
from tests.store_helpers import answer, dump, make_items

EASL = [sys.executable, "-m", "easl_toolkit.tui.cli"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def easl(*args: str, **kw) -> subprocess.CompletedProcess:
    """Run the CLI in a real subprocess."""
    return subprocess.run(EASL + list(args), capture_output=True, text=True, cwd=REPO, timeout=120, **kw)


def one_error_line(err: str) -> str:
    """The stderr of a failed command: exactly one ``error: ...`` line and no traceback."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.fixture
def project(tmp_path):
    """A project whose file name ends in .csv (so that it is a valid output name), with some annotations."""
    path = tmp_path / "proj.csv"
    with Project.create(path, make_items(23), _hyper()) as p:
        p.ingest(answer(p.open_hits(), np.random.default_rng(0)), source="setup")
    return path


def _hyper():
    from easl_toolkit.core.models import Hyper

    return Hyper()


@pytest.fixture
def annotations(tmp_path, project):
    with Project.open(project, readonly=True) as p:
        hits = p.open_hits()
    if not hits:
        assert main(["next", str(project), "--output", str(tmp_path / "h.jsonl")]) == 0
        hits = [json.loads(x) for x in (tmp_path / "h.jsonl").read_text().splitlines()]
    path = tmp_path / "ann.csv"
    answer(hits, np.random.default_rng(1), annotator="b").to_csv(path, index=False)
    return path


def snapshot(project) -> list:
    return dump(project)


# -------------------------------------------------------------------- outputs never destroy


@pytest.mark.parametrize("alias", ["same", "symlink", "hardlink", "relative"])
def test_export_refuses_the_project_file_by_any_name(tmp_path, project, capsys, alias):
    before = snapshot(project)
    target = {
        "same": project,
        "symlink": tmp_path / "link.csv",
        "hardlink": tmp_path / "hard.csv",
        "relative": tmp_path / "sub" / ".." / "proj.csv",
    }[alias]
    if alias == "symlink":
        os.symlink(project, target)
    elif alias == "hardlink":
        os.link(project, target)
    elif alias == "relative":
        (tmp_path / "sub").mkdir()
    assert main(["export", str(project), "--output", str(target)]) == 1
    err = capsys.readouterr().err
    assert "refusing to write there" in err and "project file" in err
    assert snapshot(project) == before
    assert main(["verify", str(project)]) == 0


@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
def test_export_refuses_the_wal_and_shm(tmp_path, project, capsys, suffix):
    link = tmp_path / "companion.csv"  # a name with a good extension, pointing at the (absent) companion
    os.symlink(f"{project}{suffix}", link)
    assert main(["export", str(project), "--output", str(tmp_path / "e.csv"), "--ratings", str(link)]) == 1
    assert "refusing to write there" in capsys.readouterr().err
    assert not (tmp_path / "e.csv").exists()


def test_export_ratings_to_the_project_is_refused_before_writing_the_estimates(tmp_path, project, capsys):
    before = snapshot(project)
    assert main(["export", str(project), "--output", str(tmp_path / "e.csv"), "--ratings", str(project)]) == 1
    assert not (tmp_path / "e.csv").exists()
    assert snapshot(project) == before


def test_ingest_rejects_to_the_project_is_refused_before_ingesting(tmp_path, project, annotations, capsys):
    bad = pd.read_csv(annotations)
    bad.loc[0, "score"] = 1000
    bad.to_csv(annotations, index=False)
    before = snapshot(project)
    assert main(["ingest", str(project), str(annotations), "--skip-invalid", "--rejects", str(project)]) == 1
    assert "refusing to write there" in capsys.readouterr().err
    assert snapshot(project) == before


def test_ingest_rejects_to_a_directory_is_refused_before_ingesting(tmp_path, project, annotations, capsys):
    bad = pd.read_csv(annotations)
    bad.loc[0, "score"] = 1000
    bad.to_csv(annotations, index=False)
    (tmp_path / "dir.csv").mkdir()
    before = snapshot(project)
    assert (
        main(["ingest", str(project), str(annotations), "--skip-invalid", "--rejects", str(tmp_path / "dir.csv")]) == 1
    )
    assert "is a directory" in capsys.readouterr().err
    assert snapshot(project) == before
    # a good target: the valid rows go in and the rejects are written
    assert (
        main(["ingest", str(project), str(annotations), "--skip-invalid", "--rejects", str(tmp_path / "rej.csv")]) == 0
    )
    assert len(pd.read_csv(tmp_path / "rej.csv")) == 1


def test_export_ratings_to_a_missing_directory_writes_neither(tmp_path, project, capsys):
    out = tmp_path / "e.csv"
    assert main(["export", str(project), "--output", str(out), "--ratings", str(tmp_path / "no" / "r.csv")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert not out.exists()
    assert main(["export", str(project), "--output", str(out), "--ratings", str(tmp_path / "r.csv")]) == 0
    assert out.exists() and (tmp_path / "r.csv").exists()


def test_export_same_file_twice_is_refused(tmp_path, project, capsys):
    out = tmp_path / "e.csv"
    assert main(["export", str(project), "--output", str(out), "--ratings", str(out)]) == 1
    assert "same file" in capsys.readouterr().err


def test_failed_write_leaves_the_old_outputs(tmp_path, project, monkeypatch, capsys):  # all or none
    import easl_toolkit.core.tables

    out, ratings = tmp_path / "e.csv", tmp_path / "r.csv"
    out.write_text("old estimates\n")
    ratings.write_text("old ratings\n")
    real = easl_toolkit.core.tables._write_to
    calls = []

    def failing(frame, tmp, fmt, raw_cells=False):
        calls.append(tmp)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", tmp)
        real(frame, tmp, fmt, raw_cells)

    monkeypatch.setattr(easl_toolkit.core.tables, "_write_to", failing)
    assert main(["export", str(project), "--output", str(out), "--ratings", str(ratings)]) == 1
    line = capsys.readouterr().err
    assert "No space left on device" in line and "nothing was written" in line
    assert out.read_text() == "old estimates\n" and ratings.read_text() == "old ratings\n"
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]  # no temporary left behind


@pytest.mark.parametrize("where", ["directory", "missing", "unwritable", "under_a_file"])
def test_export_output_places_are_one_sentence(tmp_path, project, where):
    (tmp_path / "d.csv").mkdir()
    (tmp_path / "plain").write_text("x")
    target = {
        "directory": tmp_path / "d.csv",
        "missing": tmp_path / "none" / "e.csv",
        "unwritable": "/proc/e.csv",
        "under_a_file": tmp_path / "plain" / "e.csv",
    }[where]
    r = easl("export", str(project), "--output", str(target))
    assert r.returncode == 1
    line = one_error_line(r.stderr)
    assert str(target) in line


def test_evaluate_output_under_a_file_is_one_sentence(tmp_path):
    data = tmp_path / "scores.csv"
    pd.DataFrame({"h1": [1, 2, 3, 4, 2, 3], "h2": [1, 2, 3, 3, 2, 4], "s": [1.2, 2.1, 2.9, 3.5, 2.2, 3.3]}).to_csv(
        data, index=False
    )
    (tmp_path / "plain").write_text("x")
    for target in (tmp_path / "plain" / "report", tmp_path / "plain"):
        r = easl("evaluate", str(data), "--human", "h1", "h2", "--system", "s", "--output", str(target))
        assert r.returncode == 1
        assert str(target) in one_error_line(r.stderr)


# ------------------------------------------------------------------------- one located error, no traceback


def test_status_json_into_a_closed_pipe_is_quiet(project):
    r = subprocess.run(
        f"{sys.executable} -m easl_toolkit.tui.cli status {project} --json | head -c 1",
        shell=True,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert r.stderr == ""
    proc = subprocess.Popen(
        EASL + ["status", str(project), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO
    )
    proc.stdout.close()  # the reader goes away before the command writes
    _, err = proc.communicate(timeout=60)
    assert err == b"" and proc.returncode in (0, 141)


def test_unexpected_error_is_one_line_with_a_debug_pointer(tmp_path, project, monkeypatch, capsys):
    import easl_toolkit.core.store.views

    def boom(self, *a, **k):
        raise RuntimeError("something unforeseen\nsecond line")

    monkeypatch.setattr(easl_toolkit.core.store.views.Output, "estimates", boom)
    assert main(["export", str(project), "--output", str(tmp_path / "e.csv")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unexpected RuntimeError: something unforeseen" in err and "--debug" in err
    assert main(["export", str(project), "--output", str(tmp_path / "e.csv"), "--debug"]) == 1
    assert "Traceback" in capsys.readouterr().err


# ------------------------------------------------------------------------------- wrong acceptance


def test_a_400_digit_score_is_a_located_error(tmp_path, project, capsys):
    with Project.open(project, readonly=True) as p:
        item = p.item_ids()[0] if hasattr(p, "item_ids") else "i000"
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps({"item_id": item, "score": 0}).replace("0}", "1" * 400 + "}") + "\n")
    before = snapshot(project)
    assert main(["ingest", str(project), str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:1: score: the number has 400 digits" in err
    assert snapshot(project) == before
    csv_path = tmp_path / "huge.csv"
    csv_path.write_text(f"item_id,score\n{item},{'1' * 400}\n")
    assert main(["ingest", str(project), str(csv_path)]) == 1
    assert f"{csv_path}:2: score:" in capsys.readouterr().err


@pytest.mark.parametrize(
    "column,value,kind",
    [
        ("item_id", {"x": 1}, "object"),
        ("item_id", ["i000"], "array"),
        ("item_id", True, "boolean"),
        ("annotation_id", True, "boolean"),
        ("annotator", {"x": 1}, "object"),
        ("hit_id", [1], "array"),
    ],
)
def test_ids_must_be_strings_or_integers(tmp_path, project, capsys, column, value, kind):
    row = {"item_id": "i000", "score": 50, "annotator": "z", column: value}
    path = tmp_path / "ann.jsonl"
    path.write_text(json.dumps(row) + "\n")
    before = snapshot(project)
    assert main(["ingest", str(project), str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:1: {column}: " in err and f"not a JSON {kind}" in err
    assert snapshot(project) == before


def test_item_ids_of_init_must_be_strings_or_integers(tmp_path, capsys):
    items = tmp_path / "items.jsonl"
    items.write_text(
        "".join(
            json.dumps({"id": v, "text": f"t{k}"}) + "\n" for k, v in enumerate(["a", {"x": 1}, "c", True, "e", "f"])
        )
    )
    assert main(["init", str(tmp_path / "p.easl"), "--items", str(items)]) == 1
    err = capsys.readouterr().err
    assert f"{items}:2: column 'id': the item id must be a string or an integer, not a JSON object" in err
    assert f"{items}:4:" in err and not (tmp_path / "p.easl").exists()


def test_csv_fields_longer_than_131072_characters_are_read(tmp_path, capsys):
    items = tmp_path / "items.csv"
    long_text = "word " * 60_000  # 300,000 characters, quoted (RFC 4180), with a comma and a quote inside
    rows = "".join(f'i{k},"{long_text}, ""quoted"" {k}"\n' for k in range(6))
    items.write_text("id,text\n" + rows)
    assert main(["init", str(tmp_path / "p.easl"), "--items", str(items)]) == 0
    with Project.open(tmp_path / "p.easl", readonly=True) as p:
        text = p.open_hits()[0]["items"][0]["text"]
    assert len(text) > 300_000 and '"quoted"' in text


# ------------------------------------------------------------------------------------- damaged project files


@pytest.fixture
def damaged(tmp_path):
    """A real project with 4,000 observations whose file has one leaf page of the observation log overwritten
    with garbage; returns (path, number of observations, the damaged page)."""
    path = tmp_path / "big.easl"
    n_items = 200
    rng = np.random.default_rng(3)
    with Project.create(path, make_items(n_items, extra=False), _hyper()) as p:
        rows = pd.DataFrame(
            {
                "item_id": [f"i{k:03d}" for k in rng.integers(0, n_items, 4000)],
                "score": rng.integers(0, 101, 4000),
                "annotator": [f"a{k}" for k in range(4000)],
            }
        )
        p.ingest(rows, source="setup")
    conn = sqlite3.connect(path)
    leaves = [
        r[0]
        for r in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = 'observations' AND pagetype = 'leaf' ORDER BY pageno"
        )
    ]
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    page = leaves[len(leaves) // 2]
    with open(path, "r+b") as fh:
        fh.seek((page - 1) * page_size)
        fh.write(bytes([0xA5]) * page_size)
    return path, 4000, page


def test_every_command_words_a_damaged_file_as_one_sentence(tmp_path, damaged):
    path, _, _ = damaged
    r = easl("export", str(path), "--output", str(tmp_path / "e.csv"), "--ratings", str(tmp_path / "r.csv"))
    assert r.returncode == 1
    line = one_error_line(r.stderr)
    assert str(path) in line and "damaged" in line and "--salvage" in line, line
    assert not (tmp_path / "e.csv").exists()
    # commands that do not read the damaged page work; none shows a traceback
    for args in (["status", str(path)], ["status", str(path), "--json"], ["next", str(path)]):
        r = easl(*args)
        assert r.returncode == 0 or str(path) in one_error_line(r.stderr), (args, r.stderr)


def test_verify_reports_the_damaged_pages(damaged):
    path, _, page = damaged
    r = easl("verify", str(path))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "the project file is damaged" in r.stdout and str(page) in r.stdout and "--salvage" in r.stdout


def test_verify_salvage_copies_every_readable_observation(tmp_path, damaged):
    path, n, _ = damaged
    out = tmp_path / "saved.easl"
    r = easl("verify", str(path), "--salvage", str(out))
    assert r.returncode == 0, r.stderr
    assert "salvaged" in r.stdout and "verified" in r.stdout
    assert easl("verify", str(out)).returncode == 0
    with Project.open(out, readonly=True) as p:
        got = p.status().n_observations
        assert p.n_items == 200
    # one leaf page of about 4 KiB holds a few dozen records: everything else is back
    assert n - 100 < got < n
    r = easl("verify", str(path), "--salvage", str(out))  # never overwrites
    assert r.returncode == 1 and "already exists" in one_error_line(r.stderr)
    r = easl("verify", str(path), "--salvage", str(path))
    assert r.returncode == 1 and "refusing to write there" in one_error_line(r.stderr)


def test_a_file_that_is_not_a_database_is_one_sentence(tmp_path):
    path = tmp_path / "junk.easl"
    path.write_bytes(os.urandom(8192))
    for args in (["status", str(path)], ["verify", str(path)], ["ingest", str(path), str(path)]):
        r = easl(*args)
        assert r.returncode == 1
        assert str(path) in one_error_line(r.stderr)


# ------------------------------------------------------------------- ingest streams in chunks, all or nothing


@pytest.fixture(params=["index kept chunk by chunk", "index built at the end"])
def small_chunks(request, monkeypatch):
    """Chunks of 7 rows, the live index kept chunk by chunk or (as for large files) built at the end."""
    import easl_toolkit.core.store.deferred
    import easl_toolkit.core.tables

    monkeypatch.setattr(easl_toolkit.core.tables, "CHUNK_ROWS", 7)
    if request.param == "index built at the end":
        monkeypatch.setattr(easl_toolkit.core.store.deferred, "LARGE_INPUT_BYTES", 0)


def _rows(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "item_id": [f"i{k:03d}" for k in rng.integers(0, 23, n)],
            "score": rng.integers(0, 101, n),
            "annotator": [f"w{k}" for k in range(n)],
        }
    )


def test_chunked_ingest_equals_one_batch(tmp_path, small_chunks, capsys):
    rows = _rows(60)
    rows.to_csv(tmp_path / "a.csv", index=False)
    a, b = tmp_path / "a.easl", tmp_path / "b.easl"
    for path in (a, b):
        Project.create(path, make_items(23), _hyper()).close()
    assert main(["ingest", str(a), str(tmp_path / "a.csv")]) == 0
    assert "60 rows: 60 new" in capsys.readouterr().out
    with Project.open(b) as p:
        p.ingest(rows, source=str(tmp_path / "a.csv"))
    with Project.open(a, readonly=True) as pa, Project.open(b, readonly=True) as pb:
        ea, eb = pa.estimates(), pb.estimates()
    pd.testing.assert_frame_equal(ea, eb)
    assert main(["verify", str(a)]) == 0


def test_a_bad_row_in_the_last_chunk_rolls_back_everything(tmp_path, project, small_chunks, capsys):
    rows = _rows(40)
    rows["score"] = rows["score"].astype(object)
    rows.loc[3, "score"] = "abc"
    rows.loc[39, "score"] = 1000
    rows.to_csv(tmp_path / "a.csv", index=False)
    before = snapshot(project)
    assert main(["ingest", str(project), str(tmp_path / "a.csv")]) == 1
    err = capsys.readouterr().err
    assert "2 of 40 rows are invalid" in err and "a.csv:5: score" in err and "a.csv:41: score" in err
    assert snapshot(project) == before


def test_conflicts_across_chunks_are_found(tmp_path, project, small_chunks, capsys):
    rows = _rows(20)
    rows.loc[15] = [rows.loc[2, "item_id"], (int(rows.loc[2, "score"]) + 1) % 100, rows.loc[2, "annotator"]]
    rows.loc[16] = rows.loc[3]  # the same score again: a duplicate
    rows.to_csv(tmp_path / "a.csv", index=False)
    before = snapshot(project)
    assert main(["ingest", str(project), str(tmp_path / "a.csv")]) == 1
    assert "a.csv:17: score: conflicts with an earlier row" in capsys.readouterr().err
    assert snapshot(project) == before
    rej = tmp_path / "rej.jsonl"
    assert main(["ingest", str(project), str(tmp_path / "a.csv"), "--skip-invalid", "--rejects", str(rej)]) == 0
    assert "20 rows: 18 new, 1 duplicate, 0 superseded, 1 rejected" in capsys.readouterr().out
    assert [json.loads(x)["location"] for x in rej.read_text().splitlines()] == [f"{tmp_path / 'a.csv'}:17"]
    assert main(["verify", str(project)]) == 0


def test_chunked_reading_keeps_lines_and_errors(tmp_path, small_chunks):
    from easl_toolkit.core.errors import InputError
    from easl_toolkit.core.tables import iter_table, read_table

    text = "item_id,score\n" + "".join(f'"i{k:03d}",{k}\n\n' for k in range(30))
    (tmp_path / "a.csv").write_text(text)
    chunks = list(iter_table(tmp_path / "a.csv"))
    assert [len(c.frame) for c in chunks] == [7, 7, 7, 7, 2]
    whole = read_table(tmp_path / "a.csv")
    assert np.concatenate([c.lines for c in chunks]).tolist() == whole.lines.tolist()
    (tmp_path / "b.csv").write_bytes(text.encode() + b"i999,\xff\n")
    with pytest.raises(InputError, match=r"b.csv:62: column 6: the file is not valid UTF-8"):
        list(iter_table(tmp_path / "b.csv"))
    (tmp_path / "c.jsonl").write_text(
        "".join(json.dumps({"item_id": "i000", "score": k}) + "\n" for k in range(9)) + "[1]\n"
    )
    with pytest.raises(InputError, match=r"c.jsonl:10: expected a JSON object"):
        list(iter_table(tmp_path / "c.jsonl"))


# --------------------------------------------------------------- half-done work / disk full: a file-size limit (EFBIG)


def _limited(limit: int):
    """A ``preexec_fn`` that caps the size of any file the child writes (RLIMIT_FSIZE) and ignores SIGXFSZ, so
    that a write past the cap fails with EFBIG, as on a full disk."""

    def apply() -> None:
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.fixture
def roomy(tmp_path):
    """A project of 3,000 items with some annotations, and a large annotation file."""
    path = tmp_path / "roomy.easl"
    rng = np.random.default_rng(5)
    with Project.create(path, make_items(3000, extra=False), _hyper()) as p:
        p.ingest(
            pd.DataFrame(
                {
                    "item_id": [f"i{k:03d}" for k in rng.integers(0, 3000, 500)],
                    "score": rng.integers(0, 101, 500),
                    "annotator": [f"a{k}" for k in range(500)],
                }
            ),
            source="setup",
        )
    rows = pd.DataFrame(
        {
            "item_id": [f"i{k:03d}" for k in rng.integers(0, 3000, 20_000)],
            "score": rng.integers(0, 101, 20_000),
            "annotator": [f"b{k}" for k in range(20_000)],
        }
    )
    rows.to_csv(tmp_path / "more.csv", index=False)
    for suffix in ("-wal", "-shm"):
        assert not os.path.exists(f"{path}{suffix}")
    return path, tmp_path / "more.csv"


def test_ingest_on_a_full_disk_fails_cleanly_and_leaves_the_project(tmp_path, roomy):  # disk full
    path, more = roomy
    before = snapshot(path)
    limit = os.path.getsize(path) + 64 * 1024  # the -shm index fits; the WAL of a 20,000-row ingest does not
    r = easl("ingest", str(path), str(more), preexec_fn=_limited(limit))
    assert r.returncode == 1, r.stdout
    line = one_error_line(r.stderr)
    assert str(path) in line and ("full" in line or "too large" in line.lower()), line
    assert easl("verify", str(path)).returncode == 0
    assert snapshot(path) == before
    assert easl("ingest", str(path), str(more)).returncode == 0  # with room, the same file goes in


def test_export_on_a_full_disk_fails_cleanly_and_writes_nothing(tmp_path, roomy):  # disk full
    path, _ = roomy
    before = snapshot(path)
    out, ratings = tmp_path / "e.csv", tmp_path / "r.parquet"
    r = easl("export", str(path), "--output", str(out), "--ratings", str(ratings), preexec_fn=_limited(48 * 1024))
    assert r.returncode == 1, r.stdout
    line = one_error_line(r.stderr)
    assert "too large" in line.lower() and "nothing was written" in line, line
    assert not out.exists() and not ratings.exists()
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]
    assert easl("verify", str(path)).returncode == 0
    assert snapshot(path) == before


def test_simulate_out_under_a_file_is_one_sentence(tmp_path):
    (tmp_path / "plain").write_text("x")
    r = easl("simulate", "metrics", "--out", str(tmp_path / "plain" / "report"))
    assert r.returncode == 1
    assert str(tmp_path / "plain" / "report") in one_error_line(r.stderr)


@pytest.mark.parametrize(
    "text, words",
    [
        ("database disk image is malformed", "damaged"),
        ("file is not a database", "not an SQLite project file"),
        ("database is locked", "locked by another process"),
        ("attempt to write a readonly database", "read-only"),
        ("database or disk is full", "disk is full"),
        ("disk I/O error", "I/O error"),
    ],
)
def test_sqlite_errors_are_worded_by_kind(text, words):
    from easl_toolkit.core.store.db import project_file_error

    exc = project_file_error("p.easl", sqlite3.OperationalError(text))
    assert str(exc).startswith("p.easl: ") and words in str(exc)


# ------------------------------------------------------------------ evaluation: inputs that cannot mean anything


def _scores(path, n=30, seed=4, scale=1.0):
    rng = np.random.default_rng(seed)
    t = rng.normal(3, 1, n)
    frame = pd.DataFrame(
        {
            "h1": np.round(t + rng.normal(0, 0.4, n)) * scale,
            "h2": np.round(t + rng.normal(0, 0.4, n)) * scale,
            "s": (t + rng.normal(0, 0.3, n)) * scale,
        }
    )
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["--human", "h1", "h1", "--system", "s"],
        ["--human", "h1", "h2", "--system", "s", "s"],
        ["--long", "item_id,annotator,score", "--human", "a", "a", "--system", "s"],
    ],
)
def test_evaluate_refuses_a_column_named_twice(tmp_path, argv):
    data = _scores(tmp_path / "scores.csv")
    report = tmp_path / "report"
    r = easl("evaluate", str(data), *argv, "--output", str(report))
    assert r.returncode == 1
    line = one_error_line(r.stderr)
    assert "twice" in line and ("'h1'" in line or "'s'" in line or "'a'" in line), line
    assert not report.exists()


def test_evaluate_refuses_a_population_smaller_than_the_sample(tmp_path):
    from easl_toolkit.core.metrics.intervals.agreement_variance import fpc_fraction

    data = _scores(tmp_path / "scores.csv", n=30)
    r = easl("evaluate", str(data), "--human", "h1", "h2", "--system", "s", "--population-size", "10", "--json")
    assert r.returncode == 1 and r.stdout == ""
    line = one_error_line(r.stderr)
    assert str(data) in line and "--population-size 10" in line and "30 responses" in line
    ok = easl("evaluate", str(data), "--human", "h1", "h2", "--system", "s", "--population-size", "30", "--json")
    assert ok.returncode == 0 and ok.stderr == ""
    assert fpc_fraction(30, 30) == 1.0
    with pytest.raises(ValueError, match="population size 10 is smaller than the 30"):
        fpc_fraction(30, 10)


def test_evaluate_refuses_scores_that_overflow_and_warns_nothing(tmp_path):
    data = _scores(tmp_path / "scores.csv")
    frame = pd.read_csv(data)
    for column, value in (("h1", "1e300"), ("s", "-1e300"), ("h2", "inf")):
        bad = frame.astype(object)
        bad.loc[4, column] = value
        bad.to_csv(data, index=False)
        r = easl("evaluate", str(data), "--human", "h1", "h2", "--system", "s", "--json")
        assert r.returncode == 1 and r.stdout == ""
        line = one_error_line(r.stderr)  # one line: no numpy overflow warning either
        assert f"{data}:6: column '{column}'" in line, line
    # the largest scores accepted give defined figures and no warning
    big = _scores(tmp_path / "big.csv", scale=1e49)
    r = easl("evaluate", str(big), "--human", "h1", "h2", "--system", "s", "--json", "--bootstrap", "20")
    assert r.returncode == 0 and r.stderr.strip() == ""  # (a blank line: the progress bar's end)
    assert json.loads(r.stdout)["systems"]["s"]["observed"]["corr"] > 0.5


# ----------------------------------------------------------------------- identity and provenance of what is read


def _items_file(path, ids, texts=None):
    texts = texts or [f"text {k}" for k in range(len(ids))]
    pd.DataFrame({"id": ids, "text": texts}).to_csv(path, index=False)
    return path


def test_ids_that_differ_only_in_unicode_normalisation_are_one_id(tmp_path, capsys):
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    items = _items_file(tmp_path / "twice.csv", [nfc, nfd, "b", "c", "d", "e"])
    assert main(["init", str(tmp_path / "p.easl"), "--items", str(items)]) == 1
    assert f"{items}:3: column 'id': duplicate item id {nfc!r} (first on line 2)" in capsys.readouterr().err
    assert not (tmp_path / "p.easl").exists()
    items = _items_file(tmp_path / "items.csv", [nfd, "b", "c", "d", "e", "f"])
    project = tmp_path / "p.easl"
    assert main(["init", str(project), "--items", str(items), "--method", "da"]) == 0
    scores = tmp_path / "scores.csv"
    # the same item scored by the same annotator, each spelt both ways: one key, two scores, a conflict
    pd.DataFrame({"item_id": [nfc, nfd], "score": [10, 20], "annotator": ["Jos\u00e9", "Jose\u0301"]}).to_csv(
        scores, index=False
    )
    assert main(["ingest", str(project), str(scores)]) == 1
    assert f"{scores}:3: score: conflicts with {scores}:2" in capsys.readouterr().err
    pd.DataFrame(
        {"item_id": [nfc, nfd, "b"], "score": [10, 20, 30], "annotator": ["Jos\u00e9", "x", "Jose\u0301"]}
    ).to_csv(scores, index=False)
    assert main(["ingest", str(project), str(scores)]) == 0
    assert (
        main(["export", str(project), "--output", str(tmp_path / "e.csv"), "--ratings", str(tmp_path / "r.csv")]) == 0
    )
    estimates = pd.read_csv(tmp_path / "e.csv", keep_default_na=False)
    assert estimates.loc[0, "item_id"] == nfc and estimates.loc[0, "item_id_original"] == nfd
    assert estimates.loc[0, "n_annotations"] == 2 and (estimates["item_id_original"][1:] == "").all()
    ratings = pd.read_csv(tmp_path / "r.csv")
    assert set(ratings["annotator"]) == {"Jos\u00e9", "x"} and set(ratings["item_id"]) == {nfc, "b"}


@pytest.mark.parametrize("column", ["item_id", "annotator", "hit_id", "annotation_id"])
@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_control_characters_in_ids_are_refused(tmp_path, project, column, fmt):
    row = {"item_id": "i000", "score": 50, "annotator": "z", "annotation_id": "a1"}
    row[column] = row.get(column, "it0-0") + ("\x00x" if fmt == "csv" else "\x1bx")
    path = tmp_path / f"ann.{fmt}"
    if fmt == "csv":
        pd.DataFrame([row]).to_csv(path, index=False)
    else:
        path.write_text(json.dumps(row) + "\n")
    before = snapshot(project)
    r = easl("ingest", str(project), str(path))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    code = "U+0000" if fmt == "csv" else "U+001B"
    assert f"{path}:{2 if fmt == 'csv' else 1}: {column}: " in r.stderr and code in r.stderr, r.stderr
    assert snapshot(project) == before


def test_control_characters_in_item_ids_of_init_are_refused(tmp_path):
    items = _items_file(tmp_path / "items.csv", ["a", "b\x00c", "c", "d", "e", "f"])
    r = easl("init", str(tmp_path / "p.easl"), "--items", str(items))
    assert (
        r.returncode == 1 and f"{items}:3: column 'id': the item id contains the control character U+0000" in r.stderr
    )
    assert "Traceback" not in r.stderr and not (tmp_path / "p.easl").exists()


def test_created_at_must_be_an_iso_8601_timestamp(tmp_path, project):
    item = "i000"
    path = tmp_path / "ann.csv"
    pd.DataFrame(
        {
            "item_id": [item, item],
            "score": [5, 6],
            "annotator": ["p", "q"],
            "created_at": ["2026-11-25T10:00:00Z", "yesterday"],
        }
    ).to_csv(path, index=False)
    before = snapshot(project)
    r = easl("ingest", str(project), str(path))
    assert r.returncode == 1 and f'{path}:3: created_at: "yesterday" is not an ISO-8601 timestamp' in r.stderr
    assert snapshot(project) == before
    pd.DataFrame(
        {"item_id": [item], "score": [5], "annotator": ["p"], "created_at": ["2026-11-25T10:00:00+01:00"]}
    ).to_csv(path, index=False)
    assert easl("ingest", str(project), str(path)).returncode == 0
    with Project.open(project, readonly=True) as p:
        assert "2026-11-25T10:00:00+01:00" in set(p.ratings()["created_at"])  # stored as given


def test_a_jsonl_object_with_a_repeated_key_is_refused(tmp_path, project):
    item = "i000"
    path = tmp_path / "ann.jsonl"
    path.write_text(f'{{"item_id": "{item}", "score": 5}}\n{{"item_id": "{item}", "score": 5, "score": 90}}\n')
    before = snapshot(project)
    r = easl("ingest", str(project), str(path))
    assert r.returncode == 1
    assert f"{path}:2: field 'score': the key appears twice" in one_error_line(r.stderr)
    assert snapshot(project) == before
    items = tmp_path / "items.jsonl"
    items.write_text("".join(f'{{"id": "i{k}", "text": "t", "id": "j{k}"}}\n' for k in range(6)))
    r = easl("init", str(tmp_path / "p.easl"), "--items", str(items))
    assert r.returncode == 1 and f"{items}:1: field 'id'" in one_error_line(r.stderr)
    assert not (tmp_path / "p.easl").exists()


def test_a_key_missing_from_some_jsonl_records_keeps_the_integers(tmp_path, monkeypatch):
    import easl_toolkit.core.tables

    monkeypatch.setattr(easl_toolkit.core.tables, "CHUNK_ROWS", 4)
    items = tmp_path / "items.jsonl"
    records = [{"id": k, "text": f"t{k}", **({"rank": 10 + k} if k % 3 else {})} for k in range(1, 10)]
    items.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["init", str(tmp_path / "p.easl"), "--items", str(items), "--method", "da", "--hit-size", "3"]) == 0
    assert main(["export", str(tmp_path / "p.easl"), "--output", str(tmp_path / "e.jsonl")]) == 0
    out = [json.loads(x) for x in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert [r["item_id"] for r in out] == [str(k) for k in range(1, 10)]
    assert [r["rank"] for r in out] == [None if k % 3 == 0 else 10 + k for k in range(1, 10)]
    table = next(easl_toolkit.core.tables.iter_table(items))
    assert [type(v) for v in table.frame["rank"].dropna()] == [int, int, int]


# ------------------------------------------------------------------- cells a spreadsheet would execute (CSV/TSV)


def test_cells_a_spreadsheet_would_execute_are_neutralised_by_default(tmp_path):
    items = tmp_path / "items.csv"
    pd.DataFrame(
        {
            "id": ['=HYPERLINK("http://x")', "+a", "-5", "@b", "'=c", "plain"],
            "text": ["=1+1", "@SUM(A1)", "-2", "\tlead", "ok", "-1+2"],
        }
    ).to_csv(items, index=False)
    project = tmp_path / "p.easl"
    assert easl("init", str(project), "--items", str(items), "--method", "da").returncode == 0
    hits = tmp_path / "hits.csv"
    assert easl("next", str(project), "--output", str(hits)).returncode == 0
    written = pd.read_csv(hits, keep_default_na=False, dtype=str)
    neutral = {'=HYPERLINK("http://x")': '\'=HYPERLINK("http://x")', "+a": "'+a", "-5": "-5", "@b": "'@b"}
    neutral.update({"'=c": "''=c", "plain": "plain"})
    assert set(written["item_id"]) == set(neutral.values())
    assert set(written["text"]) == {"'=1+1", "'@SUM(A1)", "-2", "'\tlead", "ok", "'-1+2"}
    # a file of scores built from the HIT file finds the items; its formula annotator and bad score are rejected
    scores = written[["hit_id", "item_id"]].assign(score=50, annotator="=cmd|' /C calc'!A0")
    scores["score"] = scores["score"].astype(object)
    scores.loc[0, "score"] = "=1+1"
    path = tmp_path / "scores.csv"
    scores.to_csv(path, index=False)
    rejects = tmp_path / "rejects.csv"
    r = easl("ingest", str(project), str(path), "--skip-invalid", "--rejects", str(rejects))
    assert r.returncode == 0 and "1 rejected" in r.stdout, r.stderr
    assert pd.read_csv(rejects, dtype=str).loc[0, "score"] == "'=1+1"
    out, ratings = tmp_path / "e.csv", tmp_path / "r.csv"
    assert easl("export", str(project), "--output", str(out), "--ratings", str(ratings)).returncode == 0
    estimates = pd.read_csv(out, keep_default_na=False, dtype=str)
    assert list(estimates["item_id"]) == list(neutral.values())
    assert set(pd.read_csv(ratings, dtype=str)["annotator"]) == {"'=cmd|' /C calc'!A0"}
    assert pd.read_csv(out)["estimate"].dtype.kind in "if"  # number columns untouched
    # --raw-cells: as stored
    assert easl("export", str(project), "--output", str(out), "--raw-cells").returncode == 0
    assert list(pd.read_csv(out, keep_default_na=False, dtype=str)["item_id"]) == list(neutral)
    assert "--raw-cells" in easl("next", "--help").stdout and "--raw-cells" in easl("ingest", "--help").stdout


def test_neutralised_cells_are_restored_exactly():
    import pyarrow as pa

    from easl_toolkit.core.outputs import neutralise_cells, restore_cell

    cells = ["=1", "+1", "-1", "-1.5e3", "-1+2", "@x", "\tx", "\rx", "'=x", "''@x", "'-1", "x", "", "'", "+", None]
    done = neutralise_cells(pa.table({"c": pa.array(cells, type=pa.string())})).column("c").to_pylist()
    assert done[:6] == ["'=1", "+1", "-1", "-1.5e3", "'-1+2", "'@x"]
    assert [None if c is None else restore_cell(c) for c in done] == cells


# ----------------------------------------------------------------------------------- inputs that never end


@pytest.fixture(params=["fifo", "device", "directory"])
def endless(request, tmp_path):
    """An input name with a good extension that is a FIFO with no writer, a link to /dev/zero, or a directory."""
    path = tmp_path / "input.csv"
    if request.param == "fifo":
        os.mkfifo(path)
    elif request.param == "device":
        os.symlink("/dev/zero", path)
    else:
        path.mkdir()
    return path, {"fifo": "a FIFO", "device": "a character device", "directory": "a directory"}[request.param]


@pytest.mark.parametrize("command", ["init", "ingest", "evaluate", "replay"])
def test_inputs_that_are_not_regular_files_are_refused_at_once(tmp_path, project, endless, command):
    path, kind = endless
    argv = {
        "init": ["init", str(tmp_path / "new.easl"), "--items", str(path)],
        "ingest": ["ingest", str(project), str(path)],
        "evaluate": ["evaluate", str(path), "--human", "h1", "--system", "s"],
        "replay": ["simulate", "replay", str(path), "--out", str(tmp_path / "out")],
    }[command]
    before = snapshot(project)
    r = subprocess.run(EASL + argv, capture_output=True, text=True, cwd=REPO, timeout=60)  # never blocks
    assert r.returncode == 1
    line = one_error_line(r.stderr)
    assert str(path) in line and kind in line, line
    assert snapshot(project) == before
    assert not (tmp_path / "new.easl").exists() and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------ unclear messages, leftovers


def test_a_tsv_that_is_comma_separated_says_so(tmp_path, project):
    path = tmp_path / "ann.tsv"
    path.write_text("item_id,score,annotator\ni000,50,a\n")
    r = easl("ingest", str(project), str(path))
    assert r.returncode == 1
    assert f"{path}:1: the file seems comma-separated" in one_error_line(r.stderr)
    items = tmp_path / "items.csv"
    items.write_text("id\ttext\n" + "".join(f"i{k}\tt\n" for k in range(6)))
    r = easl("init", str(tmp_path / "p.easl"), "--items", str(items))
    assert r.returncode == 1 and f"{items}:1: the file seems tab-separated" in one_error_line(r.stderr)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_leftovers_of_killed_commands_are_removed_at_the_next_run(tmp_path, project):
    dead, alive = _dead_pid(), os.getpid()
    items = _items_file(tmp_path / "items.csv", [f"i{k}" for k in range(6)])
    left = [
        f".new.easl.{dead}.creating",
        f".new.easl.{dead}.creating-journal",
        f".hits.csv.{dead}.k3x9q.tmp",
        f".e.csv.{dead}.abcd1234.tmp",
    ]
    kept = [f".new.easl.{alive}.creating", f".hits.csv.{alive}.zz.tmp", ".hits.csv.nopid.tmp", "notes.txt"]
    for name in left + kept:
        (tmp_path / name).write_text("x")
    assert easl("init", str(tmp_path / "new.easl"), "--items", str(items)).returncode == 0
    assert easl("next", str(tmp_path / "new.easl"), "--output", str(tmp_path / "hits.csv")).returncode == 0
    assert easl("export", str(project), "--output", str(tmp_path / "e.csv")).returncode == 0
    names = set(os.listdir(tmp_path))
    assert not names & set(left) and set(kept) <= names
