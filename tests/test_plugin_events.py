"""Webhook payload parsing and annotation validation (easl_plugin.events) and the label configs (label_config)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from easl_toolkit.core.errors import EaslError
from easl_toolkit.core.models import Hyper, get_model
from easl_toolkit.easl_plugin.events import (
    PayloadError,
    annotator_of,
    check_event,
    convert_annotation,
    deleted_annotation_ids,
    deleted_task_ids,
    parse_webhook,
)
from easl_toolkit.label_config.layouts import (
    SHIPPED,
    Layout,
    label_config,
    layout_for,
    shipped_xml,
    task_data,
    validate_label_config,
)

SLIDER = Layout("slider", 3, 0.0, 100.0)


def task_of(item_ids, task_id=7, hit_id="it0-1"):
    return {"id": task_id, "data": {"hit_id": hit_id, "item_ids": list(item_ids)}}


def number(j, x, name=None, kind="number"):
    return {"from_name": name or f"score_{j}", "to_name": f"text_{j}", "type": kind, "value": {"number": x}}


# ---------------------------------------------------------------------------------------------- parse_webhook


@pytest.mark.parametrize(
    "body, reason",
    [
        (b"{not json", "malformed JSON at line 1 column 2"),
        (b"[1, 2]", "expected a JSON object, got list"),
        (b'{"x": 1}', "field 'action' is missing"),
        (b'{"action": 3}', "field 'action' is missing or not a string"),
        (b"\xff\xfe", "not UTF-8"),
        (b"", "malformed JSON"),
    ],
)
def test_parse_webhook_reasons(body, reason):
    with pytest.raises(PayloadError, match=reason):
        parse_webhook(body)


def test_parse_and_check_events():
    payload = parse_webhook(
        json.dumps({"action": "ANNOTATIONS_DELETED", "annotations": [{"id": 3}, {"id": "4"}]}).encode()
    )
    assert deleted_annotation_ids(payload) == [3, 4]
    assert deleted_task_ids({"action": "TASKS_DELETED", "tasks": [{"id": 20}]}) == [20]
    with pytest.raises(PayloadError, match="annotations\\[0\\] has no integer 'id'"):
        check_event({"action": "ANNOTATIONS_DELETED", "annotations": [{"x": 1}]})
    with pytest.raises(PayloadError, match="'tasks' must be a list"):
        check_event({"action": "TASKS_DELETED", "tasks": 5})
    with pytest.raises(PayloadError, match="'annotation' must be an object"):
        check_event({"action": "ANNOTATION_CREATED", "task": {"id": 1}})
    with pytest.raises(PayloadError, match="'task' must be an object"):
        check_event({"action": "ANNOTATION_UPDATED", "annotation": {"id": 1}, "task": {"id": "x"}})
    check_event({"action": "ANNOTATION_CREATED", "annotation": {"id": 1}, "task": {"id": 2}})


# ------------------------------------------------------------------------------------------ convert_annotation


def test_convert_valid_slider_annotation():
    ann = {
        "id": 11,
        "completed_by": 4,
        "created_at": "2026-01-01T00:00:00Z",
        "result": [number(2, 30), number(0, 100), number(1, 0.5)],
    }
    out = convert_annotation(ann, task_of(["c", "a", "b"]), SLIDER)
    assert not out.reasons and not out.skipped
    assert [(r["item_id"], r["score"]) for r in out.rows] == [("c", 100.0), ("a", 0.5), ("b", 30.0)]
    assert {r["annotation_id"] for r in out.rows} == {"11"}
    assert {r["hit_id"] for r in out.rows} == {"it0-1"}
    assert {r["annotator"] for r in out.rows} == {"ls:4"}


def test_skipped_annotation_changes_nothing():
    out = convert_annotation({"id": 1, "was_cancelled": True, "result": []}, task_of("abc"), SLIDER)
    assert out.skipped and out.rows == [] and out.reasons == []


@pytest.mark.parametrize(
    "results, reason",
    [
        ([number(0, 150), number(1, 1), number(2, 2)], "score 150 is outside [0, 100]"),
        ([number(0, -1), number(1, 1), number(2, 2)], "score -1 is outside"),
        ([number(0, 5), number(1, 1), number(2, 2, name="bogus")], "unknown control 'bogus'"),
        ([number(0, 5), number(1, 1)], "incomplete: no score for item(s) c"),
        ([number(0, 5), number(1, 1), number(2, 2, kind="rating")], "type 'rating', expected 'number'"),
        ([number(0, 5), number(0, 6), number(1, 1), number(2, 2)], "item scored twice"),
        ([number(0, "50"), number(1, 1), number(2, 2)], "is not a finite number"),
        ([number(0, float("nan")), number(1, 1), number(2, 2)], "is not a finite number"),
        ([number(0, True), number(1, 1), number(2, 2)], "is not a finite number"),
        ([number(0, 1), number(1, 1), number(2, 2), number(3, 3)], "unknown control 'score_3'"),
        ([{"from_name": "score_0", "type": "number", "value": {}}, number(1, 1), number(2, 2)], "has no value.number"),
        (["x", number(1, 1), number(2, 2)], "result[0] is not an object"),
        ("nope", "result is not a list"),
    ],
)
def test_invalid_annotations_are_rejected_with_reasons(results, reason):
    out = convert_annotation({"id": 2, "result": results}, task_of("abc"), SLIDER)
    assert out.rows == []
    assert any(reason in r for r in out.reasons), out.reasons


def test_result_beyond_the_task_items_is_rejected():
    lay = Layout("slider", 4, 0.0, 100.0)
    out = convert_annotation({"id": 2, "result": [number(j, 1) for j in range(4)]}, task_of("abc"), lay)
    assert out.reasons == ["result[3] (score_3): the task shows only 3 items"]


def test_foreign_task_is_rejected():
    out = convert_annotation({"id": 2, "result": []}, {"id": 3, "data": {"text": "x"}}, SLIDER)
    assert "no 'hit_id'" in out.reasons[0]
    out = convert_annotation({"id": 2, "result": []}, {"id": 3, "data": {"hit_id": "h", "item_ids": [1]}}, SLIDER)
    assert "item_ids must be a non-empty list" in out.reasons[0]


def test_ranking_and_pairwise_conversion():
    lay = Layout("ranking", 3, 0.0, 100.0)
    ann = {
        "id": 5,
        "result": [
            {
                "from_name": "rank",
                "to_name": "items",
                "type": "ranker",
                "value": {"ranker": {"rank": ["i2", "i0", "i1"]}},
            }
        ],
    }
    out = convert_annotation(ann, task_of(["a", "b", "c"]), lay)
    assert {r["item_id"]: r["score"] for r in out.rows} == {"c": 100.0, "a": 50.0, "b": 0.0}
    bad = {"id": 5, "result": [{"from_name": "rank", "value": {"ranker": {"rank": ["i2", "i0"]}}}]}
    assert "exactly once" in convert_annotation(bad, task_of("abc"), lay).reasons[0]
    pw = Layout("pairwise", 2, 1.0, 5.0)
    out = convert_annotation(
        {"id": 6, "result": [{"from_name": "choice", "value": {"selected": "right"}}]}, task_of(["a", "b"]), pw
    )
    assert {r["item_id"]: r["score"] for r in out.rows} == {"a": 1.0, "b": 5.0}
    out = convert_annotation(
        {"id": 6, "result": [{"from_name": "choice", "value": {"selected": "up"}}]}, task_of(["a", "b"]), pw
    )
    assert "must be 'left' or 'right'" in out.reasons[0]


def test_annotator_forms():
    assert annotator_of({"completed_by": 3}) == "ls:3"
    assert annotator_of({"completed_by": {"id": 9, "email": "x@y"}}) == "ls:9"
    assert annotator_of({}) == "ls:unknown"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=-50, max_value=150, allow_nan=False), min_size=3, max_size=3))
def test_property_rows_iff_all_scores_in_range(scores):
    ann = {"id": 1, "result": [number(j, x) for j, x in enumerate(scores)]}
    out = convert_annotation(ann, task_of("abc"), SLIDER)
    ok = all(0 <= x <= 100 for x in scores)
    assert bool(out.rows) == ok and bool(out.reasons) == (not ok)
    if ok:
        assert [r["score"] for r in out.rows] == scores


# ---------------------------------------------------------------------------------------------- label configs


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_configs_are_the_generated_ones_and_valid(name):
    lay = SHIPPED[name]
    assert shipped_xml(name) == label_config(lay)
    validate_label_config(shipped_xml(name), lay)


def test_slider_config_has_one_number_per_item_on_the_range():
    lay = Layout("slider", 4, 1.0, 7.0)
    xml = label_config(lay)
    validate_label_config(xml, lay)
    assert xml.count("<Number ") == 4 and 'min="1" max="7"' in xml
    with pytest.raises(EaslError, match="range"):
        validate_label_config(xml, Layout("slider", 4, 0.0, 100.0))
    with pytest.raises(EaslError, match="no control named 'score_4'"):
        validate_label_config(xml, Layout("slider", 5, 1.0, 7.0))
    with pytest.raises(EaslError, match="not valid Label Studio XML"):
        validate_label_config("<View><Text name=", lay)


def test_layout_rules():
    def answer(method: str) -> str:
        return get_model(Hyper(method=method)).answer

    assert layout_for(answer("easl"), 5, 0, 100) == Layout("slider", 5, 0.0, 100.0)
    assert layout_for(answer("aware"), 5, 0, 100) == Layout("slider", 5, 0.0, 100.0)
    assert layout_for(answer("da"), 5, 0, 100) == Layout("slider", 5, 0.0, 100.0)  # a slider per item of the HIT
    assert layout_for(answer("ra"), 5, 0, 100).kind == "ranking"
    assert layout_for(answer("ra"), 2, 0, 100).kind == "pairwise"
    for bad in [dict(kind="stars"), dict(kind="pairwise", n=3), dict(n=0), dict(score_min=5, score_max=5)]:
        with pytest.raises(EaslError):
            Layout(**bad)
    assert Layout.from_dict(Layout("ranking", 3, 2, 9).to_dict()) == Layout("ranking", 3, 2.0, 9.0)


@pytest.mark.parametrize("method", ["easl", "ra", "trueskill", "da", "aware"])
def test_every_hit_of_every_method_fits_its_label_config(tmp_path, method):
    from easl_toolkit.core.store import Project
    from easl_toolkit.tui.cli import main

    path = str(tmp_path / "p.easl")
    items = Path(__file__).resolve().parent.parent / "examples" / "formality.csv"
    assert main(["init", path, "--items", str(items), "--method", method]) == 0
    with Project.open(path) as project:
        hyper, hits = project.hyper, project.next_hits()
        layout = layout_for(project.model.answer, hyper.hit_size, hyper.score_min, hyper.score_max)
    for hit in hits:
        data = task_data(hit, layout, np.random.default_rng(0))
        assert len(data["item_ids"]) == layout.n == len(hit["items"])


def test_task_data_keeps_the_permutation():
    hit = {"hit_id": "it2-07", "iteration": 2, "items": [{"item_id": f"x{j}", "text": f"T{j}"} for j in range(5)]}
    data = task_data(hit, Layout("slider", 5), np.random.default_rng(3))
    assert sorted(data["permutation"]) == list(range(5))
    for j, k in enumerate(data["permutation"]):
        assert data["item_ids"][j] == hit["items"][k]["item_id"]
        assert data[f"text_{j}"] == hit["items"][k]["text"]
    assert data["hit_id"] == "it2-07" and data["iteration"] == 2
    rank = task_data(hit, Layout("ranking", 5), np.random.default_rng(3))
    assert [x["title"] for x in rank["items"]] == [hit["items"][k]["text"] for k in rank["permutation"]]
    with pytest.raises(EaslError, match="has 5 items"):
        task_data(hit, Layout("slider", 3), np.random.default_rng(0))


def test_slider_config_shows_the_question_and_the_scale_labels_beside_every_slider():
    lay = Layout("slider", 3, 0.0, 100.0)
    xml = label_config(lay, question="How fluent is each text?", low_label="not fluent", high_label="perfect")
    validate_label_config(xml, lay)
    assert 'value="How fluent is each text?"' in xml
    assert xml.count('value="0 = not fluent"') == 3 and xml.count('value="100 = perfect"') == 3
    # every slider starts unset (no defaultValue) and the submit warning names the item still unset
    assert "defaultValue" not in xml and 'requiredMessage="Text 3 has no score yet' in xml
    assert "<Style>" in xml and "output:empty" in xml  # the unset state is visible
    # the question is escaped, never breaks the XML
    validate_label_config(label_config(lay, question='Is "A" < B & C?'), lay)


def test_init_stores_the_question_and_warns_without_one(tmp_path, items_csv, capsys):
    from easl_toolkit.core.store import Project
    from easl_toolkit.tui.cli import main

    path = tmp_path / "q.easl"
    assert (
        main(
            [
                "init",
                str(path),
                "--items",
                str(items_csv),
                "--question",
                "How fluent is each text?",
                "--low-label",
                "not fluent",
                "--high-label",
                "perfect",
            ]
        )
        == 0
    )
    assert "no question" not in capsys.readouterr().err
    with Project.open(path, readonly=True) as p:
        assert p.wording() == ("How fluent is each text?", "not fluent", "perfect")
    assert main(["init", str(tmp_path / "noq.easl"), "--items", str(items_csv)]) == 0
    assert "annotators will see no question" in capsys.readouterr().err


def test_refused_and_malformed_webhooks_are_counted_and_shown_without_the_credential(tmp_path, capsys):
    import base64
    import time as _time

    from starlette.testclient import TestClient

    from easl_toolkit.core.store import Project
    from easl_toolkit.easl_plugin.auth import SECRET_HEADER
    from easl_toolkit.easl_plugin.service import ServiceConfig, build_app
    from easl_toolkit.tui.cli import main
    from tests.store_helpers import new_project

    new_project(tmp_path, hit_size=4).close()
    path = str(tmp_path / "p.easl")
    auth = {"Authorization": "Basic " + base64.b64encode(b"ann:pw").decode()}
    app = build_app(ServiceConfig(project_path=path, basic_auth=("ann", "pw"), webhook_secret="top-secret-value"))
    with TestClient(app) as c:
        assert c.post("/webhook", json={"action": "START_TRAINING"}, headers=auth).status_code == 401
        wrong = {"Authorization": "Basic " + base64.b64encode(b"ann:wrong-pw").decode()}
        assert c.post("/webhook", json={"action": "START_TRAINING"}, headers=wrong).status_code == 401
        assert (
            c.post("/webhook", content=b"{oops", headers={**auth, SECRET_HEADER: "top-secret-value"}).status_code == 400
        )
        deadline = _time.monotonic() + 10
        while _time.monotonic() < deadline:
            with Project.open(path, readonly=True) as p:
                from easl_toolkit.tui.commands.ls import link_status

                out = link_status(p)
            if out["deliveries_refused"] == 2 and out["deliveries_malformed"] == 1:
                break
            _time.sleep(0.05)
    assert (out["deliveries_refused"], out["deliveries_malformed"], out["deliveries_failed"]) == (2, 1, 0)
    assert "wrong-pw" not in json.dumps(out) and "top-secret-value" not in json.dumps(out)
    assert out["open_hits"] and {"hit_id", "task_id", "idle_seconds", "annotator"} <= set(out["open_hits"][0])
    assert main(["ls", "status", path]) == 0
    text = capsys.readouterr().out
    assert "deliveries refused" in text and "open HITs" in text and "{" not in text
    assert main(["ls", "status", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["deliveries_malformed"] == 1


def test_the_dedicated_webhook_token_authorises_webhooks_only_and_rotates(tmp_path):
    import base64

    from starlette.testclient import TestClient

    from easl_toolkit.core.store import Project
    from easl_toolkit.easl_plugin.auth import SECRET_HEADER
    from easl_toolkit.easl_plugin.service import ServiceConfig, build_app
    from easl_toolkit.easl_plugin.setup import webhook_token
    from tests.store_helpers import new_project

    new_project(tmp_path, hit_size=4).close()
    path = str(tmp_path / "p.easl")
    with Project.open(path) as p:
        token = webhook_token(p)
        assert webhook_token(p) == token and len(token) >= 40
    app = build_app(ServiceConfig(project_path=path, basic_auth=("ann", "pw"), webhook_secret="shared"))
    event = {"action": "ANNOTATIONS_DELETED", "annotations": [{"id": 9}]}
    with TestClient(app) as c:
        assert c.post("/webhook", json=event, headers={SECRET_HEADER: token}).json()["status"] == "queued"
        assert c.get("/status", headers={SECRET_HEADER: token}).status_code == 401  # webhook delivery only
        assert c.post("/setup", json={}, headers={SECRET_HEADER: token}).status_code == 401
        assert c.get("/health").json().keys() <= {"status", "version", "model_class", "model_version"}
        with Project.open(path) as p:
            new = webhook_token(p, rotate=True)
        assert new != token
        time.sleep(0.3)
        assert c.post("/webhook", json=event, headers={SECRET_HEADER: new}).status_code == 200
        assert c.post("/webhook", json=event, headers={SECRET_HEADER: token}).status_code == 401
        auth = {"Authorization": "Basic " + base64.b64encode(b"ann:pw").decode()}
        assert c.post("/webhook", json=event, headers={**auth, SECRET_HEADER: "shared"}).status_code == 200
