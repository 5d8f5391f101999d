"""A campaign in a real browser: Debian's Chromium driven by Playwright against a real Label Studio and `easl serve`.

A project manager runs `easl ls setup` with a question and scale labels; two annotators sign up through the invite
link, log in, read the question and the labels, set the five sliders of a HIT (0 and 50 among them, by click and
by keyboard; submit first refuses and names the unset item), and submit. Then, with the default queue:

- the two annotators work through the first batch in the labelling stream, submitting within 0.5 s of each other,
  the last two tasks of the batch included: both are given the next task in the same stream (never "No More
  Tasks"), its sliders unset;
- an annotator opens a task from the Data Manager: it has a prediction, and its sliders are unset;
- the Data Manager's first tab shows neither the internal fields, the estimates nor the annotations' results;
  the project manager's tab shows the estimates;
- an annotator works on a task and leaves it: `easl ls status` names them, and after a short `--hit-timeout`
  the HIT is re-issued while the untouched open tasks (one of them opened by the other annotator) are not.

Chromium comes from Debian's packages (``tests.ls_server.ensure_chromium`` installs it when missing; the test fails
with the reason when it cannot); Playwright only drives it (``executable_path``; no browser download). The pages'
screenshots are saved under a temporary directory whose path is printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
import requests

from easl_toolkit.core.store import Project
from tests.ls_server import create_annotator, ensure_chromium, free_port, running_server, wait_for

pytestmark = pytest.mark.labelstudio

REPO = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
QUESTION, LOW, HIGH = "How fluent is each text?", "not fluent", "perfectly fluent"
HIT_TIMEOUT_S = 20
ESTIMATES_TAB = "Estimates (project manager)"


def easl(*args: str, env: dict) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "easl_toolkit.tui.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=180,
    )
    assert proc.returncode == 0, f"easl {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def tasks(ls, pid: int) -> list[dict]:
    r = requests.get(
        f"{ls.url}/api/tasks",
        params={"project": pid, "fields": "all", "page_size": 500},
        headers={"Authorization": f"Token {ls.token}"},
        timeout=30,
    )
    r.raise_for_status()
    body = r.json()
    return body["tasks"] if isinstance(body, dict) else body


def _project(ls, pid: int) -> dict:
    r = requests.get(f"{ls.url}/api/projects/{pid}", headers={"Authorization": f"Token {ls.token}"}, timeout=30)
    r.raise_for_status()
    return r.json()


def log_in(browser, url: str, email: str, password: str):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{url}/user/login/")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda u: "/user/login" not in u, timeout=30_000)
    return page


def open_labeling(page, url: str, pid: int) -> None:
    """Open the labelling stream as annotators do: the project's Data Manager, then *Label All Tasks*. (Opening
    ``?labeling=1`` directly would make Label Studio 1.23.2 serve the Data Manager's queue, which takes no task
    lock, so two annotators could be given the same task.)"""
    page.goto(f"{url}/projects/{pid}/data")
    page.get_by_role("button", name="Label All Tasks").click()
    page.wait_for_selector("input[type=range]", timeout=60_000)
    page.wait_for_timeout(500)


def outputs(page) -> list[str]:
    return [o.inner_text().strip() for o in page.locator(".easl-scale output").all()]


def click_at(page, slider, fraction: float) -> None:
    box = slider.bounding_box()
    page.mouse.click(box["x"] + box["width"] * fraction, box["y"] + box["height"] / 2)
    page.wait_for_timeout(150)


def score_hit(page) -> list[str]:
    """Set the five sliders: 0 (Home), 50 (Home then Page Up five times), 50 by clicks (a click at a fifth, then
    one on the middle), a click near the top, 100 (End). Returns the values shown beside the sliders."""
    sliders = page.locator(".easl-scale input[type=range]")
    assert sliders.count() == 5
    assert outputs(page) == [""] * 5  # every slider starts unset ...
    marks = page.eval_on_selector_all(".easl-scale output", "os => os.map(o => getComputedStyle(o, '::after').content)")
    assert marks == ['"not set"'] * 5  # ... and says so
    sliders.nth(0).focus()
    page.keyboard.press("Home")
    sliders.nth(1).focus()
    page.keyboard.press("Home")
    for _ in range(5):
        page.keyboard.press("PageUp")
    click_at(page, sliders.nth(2), 0.2)
    click_at(page, sliders.nth(2), 0.5)
    click_at(page, sliders.nth(3), 0.9)
    # submitting with one slider unset is refused, and the message names the item
    page.get_by_test_id("bottombar-submit-button").click()
    warning = page.get_by_text("Text 5 has no score yet")
    warning.first.wait_for(timeout=10_000)
    # under load one click can be validated twice: close every warning it raised before going on
    for _ in range(5):
        if not warning.first.is_visible():
            break
        page.get_by_role("button", name="OK").first.click()
        page.wait_for_timeout(300)
    warning.first.wait_for(state="hidden", timeout=10_000)
    sliders.nth(4).focus()
    page.keyboard.press("End")
    page.wait_for_timeout(200)
    return outputs(page)


def score_quickly(page, *, submit: bool = True) -> None:
    """Set the five sliders by keyboard (End, Home, and Page Up from Home) and, with ``submit``, submit."""
    sliders = page.locator(".easl-scale input[type=range]")
    for j in range(sliders.count()):
        sliders.nth(j).focus()
        page.keyboard.press("Home")
        for _ in range(j):
            page.keyboard.press("PageUp")
    # every slider shows its value before the submission (under load the key presses land late)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.easl-scale output')].every(o => o.textContent.trim() !== '')",
        timeout=20_000,
    )
    if submit:
        page.get_by_test_id("bottombar-submit-button").click()


def next_task_in_stream(page) -> None:
    """After a submission: the stream shows the next task, its sliders unset, never "No More Tasks"."""
    page.wait_for_function(
        "() => document.querySelectorAll('.easl-scale output').length === 5 && "
        "[...document.querySelectorAll('.easl-scale output')].every(o => o.textContent.trim() === '')",
        timeout=20_000,
    )
    assert page.get_by_text("No More Tasks").count() == 0


def manager_sees_the_campaign(browser, ls, pid: int, shots: Path) -> None:
    """The project manager's Data Manager: the texts in the first tab, never the internal fields nor the estimates;
    the estimates in the project manager's tab."""
    page = log_in(browser, ls.url, ls.username, ls.password)
    try:
        page.goto(f"{ls.url}/projects/{pid}/data")
        page.get_by_text("text_0", exact=True).first.wait_for(timeout=60_000)
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots / "manager-first-tab.png"))
        for internal in ("hit_id", "permutation", "item_ids"):
            assert page.get_by_text(internal, exact=True).count() == 0, f"{internal} is a visible column"
        assert page.get_by_text("easl_estimates").count() == 0  # no estimates in the first tab
        page.get_by_text(ESTIMATES_TAB).first.click()
        page.set_viewport_size({"width": 2600, "height": 900})  # wide enough to show the estimates column
        page.get_by_text("easl_estimates").first.wait_for(timeout=30_000)
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots / "manager-estimates-tab.png"))
        assert page.get_by_text("hit_id", exact=True).count() == 0
    finally:
        page.close()


def annotator_opens_from_data_manager(browser, ls, pid: int, who, password: str, shots: Path) -> None:
    """An annotator opens an open task (with a prediction) from the Data Manager: its sliders are unset, and the
    first tab shows them no estimates."""

    def with_prediction():
        return next((t for t in tasks(ls, pid) if t["predictions"] and not t["annotations"]), None)

    task = wait_for(with_prediction, "an open task with a prediction", 30)
    page = log_in(browser, ls.url, who.email, password)
    try:
        page.goto(f"{ls.url}/projects/{pid}/data")
        page.get_by_text("text_0", exact=True).first.wait_for(timeout=60_000)
        assert page.get_by_text("easl_estimates").count() == 0
        page.goto(f"{ls.url}/projects/{pid}/data?task={task['id']}")
        page.wait_for_selector(".easl-scale input[type=range]", timeout=60_000)
        page.wait_for_timeout(1500)
        page.screenshot(path=str(shots / "annotator-data-manager-task.png"))
        assert outputs(page) == [""] * 5, outputs(page)  # nothing pre-filled from the prediction
    finally:
        page.close()


def test_a_campaign_in_chromium(tmp_path):
    from playwright.sync_api import sync_playwright

    chromium = ensure_chromium()
    shots = Path(tempfile.mkdtemp(prefix="easl-browser-"))
    items = tmp_path / "items.csv"
    items.write_text(
        "id,text\n" + "".join(f"item{i:02d},This is sentence number {i} of the test.\n" for i in range(30))
    )
    project = tmp_path / "b.easl"
    with running_server() as ls:
        env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token}
        passwords = [f"pw-rater-{k}-{ls.token[:8]}" for k in (1, 2)]
        people = [create_annotator(ls, f"rater{k}@example.com", pw) for k, pw in zip((1, 2), passwords)]
        easl(
            "init",
            str(project),
            "--items",
            str(items),
            "--hit-size",
            "5",
            "--seed",
            "2",
            "--question",
            QUESTION,
            "--low-label",
            LOW,
            "--high-label",
            HIGH,
            env=env,
        )
        port = free_port()
        log = open(tmp_path / "serve.log", "w")  # noqa: SIM115 (a server's log, open for its lifetime)
        serve = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "easl_toolkit.tui.cli",
                "serve",
                str(project),
                "--port",
                str(port),
                "--hit-timeout",
                str(HIT_TIMEOUT_S),
                "--reconcile-interval",
                "4",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=env,
        )
        pages: dict[str, object] = {}
        try:
            wait_for(lambda: _up(f"http://127.0.0.1:{port}"), "easl serve", 30)
            info = json.loads(
                easl(
                    "ls",
                    "setup",
                    str(project),
                    "--url",
                    ls.url,
                    "--backend-url",
                    f"http://127.0.0.1:{port}",
                    "--json",
                    env=env,
                ).stdout
            )
            pid = info["ls_project_id"]
            assert info["connection"] == "ml-backend" and info["tasks_imported"] == 6
            first_batch = {t["id"] for t in tasks(ls, pid)}
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
                try:
                    for k, (person, password) in enumerate(zip(people, passwords)):
                        page = log_in(browser, ls.url, person.email, password)
                        pages[person.email] = page
                        open_labeling(page, ls.url, pid)
                        assert page.get_by_text(QUESTION).count() >= 1
                        assert page.locator(".easl-low", has_text=f"0 = {LOW}").count() == 5
                        assert page.locator(".easl-high", has_text=f"100 = {HIGH}").count() == 5
                        shown = score_hit(page)
                        page.screenshot(path=str(shots / f"rater{k + 1}-scored.png"))
                        assert shown == ["0", "50", "50", shown[3], "100"] and 80 <= int(shown[3]) <= 100, shown
                        page.get_by_test_id("bottombar-submit-button").click()
                        next_task_in_stream(page)
                    # the two work on through the first batch in their labelling streams, submitting within
                    # 0.5 s of each other, the last two tasks of the batch included: both are given the next task
                    # in the same stream, its sliders unset (the queue's depth covers a burst of every active
                    # annotator); each takes longer over a task than the backend over a submission (on a loaded
                    # machine a cycle takes seconds): a burst starts once the backend has taken in the submissions
                    # before it and topped the queue up
                    turn, gaps = 0, []

                    def caught_up() -> bool:
                        with Project.open(project, readonly=True) as store:
                            if len(store.ratings()) < 5 * (2 + 2 * turn):
                                return False
                        return sum(not t["annotations"] for t in tasks(ls, pid)) >= 2 * len(people)

                    while any(not t["annotations"] for t in tasks(ls, pid) if t["id"] in first_batch) and turn < 8:
                        wait_for(caught_up, "the backend to take in the submissions and top the queue up", 60)
                        both = [pages[p.email] for p in people]
                        for page in both:
                            score_quickly(page, submit=False)
                        started = time.monotonic()
                        for page in both:
                            page.get_by_test_id("bottombar-submit-button").click()
                        gaps.append(time.monotonic() - started)
                        for page in both:
                            next_task_in_stream(page)
                        turn += 1
                    assert turn >= 2 and max(gaps) <= 0.5, gaps
                    last = pages[people[1].email]
                    last.screenshot(path=str(shots / "after-the-batch-the-next-task-in-the-same-stream.png"))
                    assert last.get_by_text(QUESTION).count() >= 1

                    def scored() -> bool:
                        with Project.open(project, readonly=True) as store:
                            return store.iteration() >= 1 and len(store.ratings()) == 5 * (2 + 2 * turn)

                    wait_for(scored, "every submission in the project", 30)
                    # an annotator opens a task from the Data Manager: its sliders are unset
                    annotator_opens_from_data_manager(browser, ls, pid, people[1], passwords[1], shots)
                    manager_sees_the_campaign(browser, ls, pid, shots)
                    # the project description shows the campaign's progress to the project manager
                    wait_for(lambda: "EASL campaign" in _project(ls, pid)["description"], "progress in the description")
                    # rater 1 works on the task their stream shows (a draft is saved) and leaves it
                    page = pages[people[0].email]
                    click_at(page, page.locator(".easl-scale input[type=range]").nth(0), 0.3)
                    page.wait_for_timeout(7_000)  # Label Studio saves a draft about 5 s after a change
                    page.screenshot(path=str(shots / "rater1-leaves-a-task.png"))
                    page.close()
                    del pages[people[0].email]
                    held = wait_for(lambda: _held_by(project, people[0].email, env), "rater 1 named as holder", 30)
                    before = {t["id"]: t["data"]["hit_id"] for t in tasks(ls, pid)}

                    def reissued() -> list[str]:
                        hits = [t["data"]["hit_id"] for t in tasks(ls, pid)]
                        return [h for h in set(hits) if hits.count(h) >= 2]

                    assert wait_for(reissued, "the left HIT re-issued", HIT_TIMEOUT_S + 40) == [held["hit_id"]]
                    # the untouched open tasks (one of them opened by rater 2) were not re-issued
                    after = {t["id"]: t["data"]["hit_id"] for t in tasks(ls, pid)}
                    assert set(before) <= set(after)
                    listed = list(after.values())
                    assert all(listed.count(h) == 1 for h in before.values() if h != held["hit_id"])
                    # the export names the annotators by their Label Studio e-mail
                    easl(
                        "export",
                        str(project),
                        "--output",
                        str(tmp_path / "est.csv"),
                        "--ratings",
                        str(tmp_path / "ratings.csv"),
                        env=env,
                    )
                    exported = pd.read_csv(tmp_path / "ratings.csv")
                    assert set(exported["annotator"]) == {person.email for person in people}
                    assert easl("verify", str(project), env=env).stdout.startswith("ok")
                except Exception:
                    for name, pg in pages.items():
                        pg.screenshot(path=str(shots / f"failure-{name}.png"))
                    print(f"screenshots: {shots}")
                    raise
                finally:
                    browser.close()
        finally:
            serve.terminate()
            serve.wait(20)
            log.close()
    print(f"screenshots: {shots}")


def _held_by(project: Path, email: str, env: dict) -> dict | None:
    """The open HIT `easl ls status` says ``email`` holds (a draft of theirs), if any."""
    out = json.loads(easl("ls", "status", str(project), "--json", env=env).stdout)
    return next((h for h in out["open_hits"] if h["annotator"] == email), None)


def _up(url: str) -> bool:
    try:
        return requests.get(f"{url}/health", timeout=1).ok
    except requests.RequestException:
        return False
