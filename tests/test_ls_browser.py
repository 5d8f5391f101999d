"""A campaign in a real browser: Debian's Chromium driven by Playwright against a real Label Studio and `easl serve`.

Issue 11, item 9. A project manager runs `easl ls setup` with a question and scale labels; two annotators sign up
through the invite link, log in, read the question and the labels, set the five sliders of a HIT (0 and 50 among
them, by click and by keyboard; submit first refuses and names the unset item), and submit; the next iteration's
tasks appear; the project manager's Data Manager shows the texts but not the internal task fields; the export
names the annotators by e-mail; a task opened and left alone is re-issued after a short `--hit-timeout`.

Chromium comes from Debian's packages (``tests.ls_server.ensure_chromium`` installs it when missing; the test fails
with the reason when it cannot); Playwright only drives it (``executable_path``; no browser download). On failure
the pages' screenshots are saved under a temporary directory whose path is printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
import requests

from core.store import Project
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
HIT_TIMEOUT_S = 30


def easl(*args: str, env: dict) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "tui.cli", *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=180
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
    page.goto(f"{url}/projects/{pid}/data?labeling=1")
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
    page.get_by_text("Text 5 has no score yet").wait_for(timeout=10_000)
    page.get_by_role("button", name="OK").click()
    sliders.nth(4).focus()
    page.keyboard.press("End")
    page.wait_for_timeout(200)
    return outputs(page)


def manager_sees_the_campaign(browser, ls, pid: int, shots: Path) -> None:
    """The project manager's Data Manager: the texts and the predictions' columns, never the internal fields."""
    page = log_in(browser, ls.url, ls.username, ls.password)
    try:
        page.goto(f"{ls.url}/projects/{pid}/data")
        page.get_by_text("text_0", exact=True).first.wait_for(timeout=60_000)
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots / "manager-data-manager.png"))
        for internal in ("hit_id", "permutation", "item_ids"):
            assert page.get_by_text(internal, exact=True).count() == 0, f"{internal} is a visible column"
    finally:
        page.close()


def test_a_campaign_in_chromium(tmp_path):
    from playwright.sync_api import sync_playwright

    chromium = ensure_chromium()
    shots = Path(tempfile.mkdtemp(prefix="easl-browser-"))
    items = tmp_path / "items.csv"
    items.write_text(
        "id,text\n" + "".join(f"item{i:02d},This is sentence number {i} of the test.\n" for i in range(10))
    )
    project = tmp_path / "b.easl"
    with running_server() as ls:
        env = {**os.environ, "LABEL_STUDIO_API_KEY": ls.token}
        people = [create_annotator(ls, f"rater{k}@example.com", f"pw-rater-{k}-{ls.token[:8]}") for k in (1, 2)]
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
                "tui.cli",
                "serve",
                str(project),
                "--port",
                str(port),
                "--hit-timeout",
                str(HIT_TIMEOUT_S),
                "--reconcile-interval",
                "2",
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
            assert info["connection"] == "ml-backend" and info["tasks_imported"] == 2
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
                try:
                    for k, (person, password) in enumerate(
                        zip(people, [f"pw-rater-{k}-{ls.token[:8]}" for k in (1, 2)])
                    ):
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
                        page.wait_for_timeout(1000)
                    # the next iteration's two tasks appear
                    wait_for(
                        lambda: sum(t["data"]["iteration"] == 1 for t in tasks(ls, pid)) >= 2,
                        "the next iteration's tasks",
                        60,
                    )
                    with Project.open(project, readonly=True) as store:
                        ratings = store.ratings()
                        assert store.iteration() == 1 and len(ratings) == 10
                        assert {0.0, 50.0, 100.0} <= set(ratings["score"])
                    # the project description shows the campaign's progress to the project manager
                    wait_for(lambda: "iteration 1" in _project(ls, pid)["description"], "progress in the description")
                    manager_sees_the_campaign(browser, ls, pid, shots)
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
                    # rater 1 opens a task of the new iteration and leaves it: it is re-issued after --hit-timeout
                    page = pages[people[0].email]
                    open_labeling(page, ls.url, pid)
                    page.screenshot(path=str(shots / "rater1-next-iteration.png"))
                    assert page.get_by_text(QUESTION).count() >= 1

                    def reissued() -> list[str]:
                        hits = [t["data"]["hit_id"] for t in tasks(ls, pid) if t["data"]["iteration"] == 1]
                        return [h for h in set(hits) if hits.count(h) >= 2]

                    assert wait_for(reissued, "stalled HITs re-issued", HIT_TIMEOUT_S + 30)
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


def _up(url: str) -> bool:
    try:
        return requests.get(f"{url}/health", timeout=1).ok
    except requests.RequestException:
        return False
