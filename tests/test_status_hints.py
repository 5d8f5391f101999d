"""What `easl status` says and lets one do on an existing project: the stop target set, changed and removed, the
Label Studio rows of a linked project only, the variances and uniform passes explained; the extra that `easl ls
setup` and `easl serve` need named in one sentence; `--output` on every command that writes a directory."""

import json
import sys

import pytest

from easl_toolkit.tui.cli import main

ITEMS = "id,text\n" + "".join(f"s{i:02d},sentence {i}\n" for i in range(12))


@pytest.fixture
def project(tmp_path, capsys):
    items = tmp_path / "items.csv"
    items.write_text(ITEMS)
    path = tmp_path / "p.easl"
    assert main(["init", str(path), "--items", str(items), "--question", "q"]) == 0
    capsys.readouterr()
    return path


def stop_target(path, capsys):
    assert main(["status", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["stop"]["target"]


def test_stop_target_is_set_changed_and_removed_on_an_existing_project(project, capsys):
    assert stop_target(project, capsys) is None
    assert main(["status", str(project), "--set-stop-at", "0.9"]) == 0
    assert "stop target: 0.9 (was none)" in capsys.readouterr().err
    assert stop_target(project, capsys) == 0.9
    assert main(["status", str(project), "--set-stop-at", "0.85"]) == 0
    assert "stop target: 0.85 (was 0.9)" in capsys.readouterr().err
    assert main(["status", str(project), "--set-stop-at", "none"]) == 0
    assert "stop target: none (was 0.85)" in capsys.readouterr().err
    assert stop_target(project, capsys) is None


def test_stop_target_out_of_range_or_on_another_method_is_refused(project, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["status", str(project), "--set-stop-at", "1.2"])
    assert exc.value.code == 2 and "in (0, 1)" in capsys.readouterr().err
    items = tmp_path / "items.csv"
    da = tmp_path / "da.easl"
    assert main(["init", str(da), "--items", str(items), "--method", "da"]) == 0
    capsys.readouterr()
    assert main(["status", str(da), "--set-stop-at", "0.9"]) == 1
    assert "needs the method aware" in capsys.readouterr().err


def test_the_hint_without_a_stop_target_names_a_command_that_works(project, capsys):
    assert main(["status", str(project), "--json"]) == 0
    reason = json.loads(capsys.readouterr().out)["stop"]["reason"]
    assert "easl status PROJECT --set-stop-at RHO" in reason and "easl init" not in reason


def test_file_campaign_status_has_no_label_studio_rows_and_explains_its_figures(project, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["status", str(project)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "events pending" not in out and "last reconciliation" not in out
    assert "uniform passes" in out and "before the model picks which items to score next" in out
    assert "variance: the posterior variance of an item's estimate, on the score range mapped to [0, 1]" in out


def test_linked_project_status_keeps_the_label_studio_rows(project, capsys):
    from easl_toolkit.core.store import Project

    with Project.open(project) as p:
        p.set_meta({"ls.project_id": "7"})
    assert main(["status", str(project)]) == 0
    out = capsys.readouterr().out
    assert "events pending / failed" in out and "last reconciliation" in out


@pytest.mark.parametrize(
    ("argv", "needs"),
    [(["serve", "p.easl"], "easl serve"), (["ls", "setup", "p.easl", "--url", "http://x"], "easl ls setup")],
)
def test_label_studio_commands_without_the_extra_name_what_to_install(monkeypatch, capsys, argv, needs):
    monkeypatch.setitem(sys.modules, "label_studio_sdk", None)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{needs} needs the Label Studio extra" in err
    assert "pip install 'easl-toolkit[labelstudio]'" in err


def test_simulate_takes_output_like_every_other_command(tmp_path):
    from easl_toolkit.tui.cli import build_parser

    args = build_parser().parse_args(["simulate", "prmse", "--quick", "--output", str(tmp_path / "o")])
    assert args.out == str(tmp_path / "o")
    args = build_parser().parse_args(["simulate", "replay", "--out", str(tmp_path / "p")])  # the old name
    assert args.out == str(tmp_path / "p")


def test_simulate_help_prints_defaults_as_typed(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "replay", "--help"])
    out = capsys.readouterr().out
    assert "('" not in out and "%%" not in out and "(default: da,da-z,easl,aware)" in " ".join(out.split())


def test_status_names_the_delivery_rejects_as_the_plugin_does():
    from easl_toolkit.easl_plugin.deliveries import DELIVERY_SOURCE
    from easl_toolkit.tui.commands import status

    assert status.DELIVERY_SOURCE == DELIVERY_SOURCE


def test_status_runs_without_the_plugins_web_layer(project, monkeypatch, capsys):
    for module in (
        "starlette",
        "starlette.requests",
        "easl_toolkit.easl_plugin.deliveries",
        "easl_toolkit.easl_plugin.payloads",
    ):
        monkeypatch.setitem(sys.modules, module, None)  # as in a core install: importing them fails
    assert main(["status", str(project)]) == 0
    assert main(["ls", "status", str(project)]) == 1
    assert "easl ls status needs the Label Studio extra" in capsys.readouterr().err
