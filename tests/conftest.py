"""Shared fixtures and test markers.

Markers (declared in ``pyproject.toml``; ``make test`` runs everything, ``make test-fast`` deselects all three):

- ``labelstudio``: needs the real Label Studio server (``tests/ls_server.py`` installs it once, minutes).
- ``tmux``: drives the app in a real terminal through tmux (``tests/tmux_harness.py``).
- ``slow``: a few seconds or more each: kills subprocesses mid-write, drives the whole Textual app, runs a
  simulation study or many CLI subprocesses.

The marks of whole modules and of single tests are listed here, in ``MARKS``, so that the split between the
inner loop and the full suite is decided in one place; ``test_ls_plugin.py`` sets its ``labelstudio`` mark itself.

Fixtures:

- ``repo_root``: the checkout's root directory.
- ``easl_cli``: run ``python -m tui.cli ARGS`` in a subprocess from the repository root.
- ``items_csv``: a 23-item CSV (``id, text, topic, latent``) for ``easl init``.
- ``store_project``: a fresh project file of 23 items (``tests.store_helpers.new_project``), closed afterwards.
- ``tui_settings``: the terminal app's settings file moved into ``tmp_path`` (no remembered annotator).
- ``make_tui_project``: factory of small project files for the app tests, with the settings isolated.
- ``tui_project``: ``make_tui_project()`` with its defaults (12 items, HITs of 3).
- ``big`` (module scope, from ``tests/durability_helpers.py``): a project of 2,000 items with a 60,000-row
  annotation file, for the durability tests.
- ``political_oracle_file``: the EASL paper's political-spectrum oracle, which is not shipped (no licence): read
  from ``../shared/data/`` beside the repository when present, else the test is skipped with the file's name.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.durability_helpers import big  # noqa: F401 (the durability tests' module fixture, shared here)

# property tests are judged on what they find, not on how fast: the machine's other work (a shared 2-core box, the
# Label Studio server of the integration tests) must not turn a slow example into a failure (hypothesis' deadline)
settings.register_profile("easl", deadline=None)
settings.load_profile("easl")

REPO_ROOT = Path(__file__).resolve().parent.parent

#: (module file name, test name or None for the whole module) -> marker name. Test names match without their
#: parameters (``test_x`` marks ``test_x[a]`` and ``test_x[b]``).
MARKS: dict[tuple[str, str | None], str] = {
    ("test_tui_terminal.py", "test_annotate_one_hit_in_a_real_terminal"): "tmux",
    ("test_tui_terminal.py", "test_make_runs_demo_opens_the_real_campaign_on_the_monitor_within_30_seconds"): "tmux",
    ("test_tui_terminal.py", "test_tui_argument_errors_exit_1_with_one_sentence"): "slow",  # 6 CLI subprocesses
    ("test_durability.py", None): "slow",
    ("test_packaging.py", "test_the_wheel_installs_exactly_one_top_level_package"): "slow",  # builds the wheel
    ("test_readme_commands.py", "test_readme_and_getting_started_commands_run_as_written"): "slow",  # pip install
    ("test_output_schema.py", "test_a_dask_evaluation_validates_against_the_shipped_schema"): "slow",  # a cluster
    (
        "test_service_faults.py",
        "test_a_burst_of_concurrent_webhooks_loses_and_doubles_nothing",
    ): "slow",  # SIGKILL of CLI subprocesses at every write
    ("test_tui_annotate.py", None): "slow",  # the Textual app driven by a pilot
    ("test_tui_evaluate.py", None): "slow",
    ("test_tui_export.py", None): "slow",
    ("test_tui_monitor.py", None): "slow",
    ("test_tui_snapshots.py", None): "slow",
    ("test_simulate_prmse.py", None): "slow",  # the PRMSE paper's 10,000-response simulation
    # 24 simulated campaigns: the stopping rule's hit rate with random clickers concentrated on some items
    (
        "test_stopping_rule_clickers.py",
        "test_hit_rate_with_clickers_concentrated_on_some_items_is_at_least_nine_in_ten",
    ): "slow",
    # single tests of a few seconds each: reports with figures, goodness-of-fit and property tests, subprocesses
    ("test_simulate_easl.py", "test_cli_writes_the_report"): "slow",
    ("test_simulate_easl.py", "test_political_file_name_selects_the_papers_range"): "slow",
    ("test_simulate_easl.py", "test_default_oracle_is_generated_and_needs_no_data_file"): "slow",
    ("test_simulate_metrics.py", "test_cli_quick_writes_the_report"): "slow",
    ("test_selection.py", "test_fast_sampler_matches_exact_law_and_literal"): "slow",
    ("test_store.py", "test_any_sequence_of_operations_keeps_cache_and_log_consistent"): "slow",
    ("test_cli_core.py", "test_bad_items_file_exits_1_and_creates_nothing"): "slow",
    ("test_cli_core.py", "test_user_and_usage_errors_exit_codes"): "slow",
    ("test_cli_core.py", "test_simulated_demo_runs_and_writes_an_export"): "slow",
    ("test_replay.py", "test_demo_replays_real_annotators_beside_da_and_keeps_the_project"): "slow",
    ("test_plugin_service.py", "test_serve_runs_the_worker_in_a_child_that_lives_and_dies_with_it"): "slow",
    # a LocalCluster of 2 worker processes: millions of ratings, a killed worker, CLI subprocesses
    ("test_dask_evaluate.py", "test_every_metric_on_a_cluster_equals_in_memory"): "slow",
    ("test_dask_evaluate.py", "test_a_worker_killed_mid_computation_gives_the_same_result_or_a_clear_error"): "slow",
    ("test_dask_evaluate.py", "test_the_bootstrap_merges_poisson_weights_and_is_reproducible"): "slow",
    ("test_dask_evaluate.py", "test_the_command_line_against_a_running_scheduler_writes_the_same_json"): "slow",
    ("test_dask_evaluate.py", "test_an_unreachable_scheduler_is_one_clear_error"): "slow",
    ("test_dask_evaluate.py", "test_the_long_form_split_across_files_equals_load_long"): "slow",
    ("test_dask_evaluate.py", "test_missing_columns_and_repeated_ids_are_one_clear_error"): "slow",
    ("test_dask_simulate.py", None): "slow",
    # the commands behind the documentation's outputs (easl demo, ...) and the replay behind its table (a minute)
    ("test_docs_outputs.py", "test_every_shown_output_is_what_the_command_prints"): "slow",
    ("test_docs_figures.py", "test_the_replay_table_is_what_the_replay_prints"): "slow",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the markers of ``MARKS`` to the collected tests."""
    for item in items:
        module = item.path.name
        name = getattr(item, "originalname", None) or item.name
        for key in ((module, None), (module, name)):
            marker = MARKS.get(key)
            if marker is not None:
                item.add_marker(getattr(pytest.mark, marker))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository's root directory."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def easl_cli() -> Callable[..., subprocess.CompletedProcess]:
    """``run(*args, env=None, timeout=120)``: ``python -m tui.cli ARGS`` in a subprocess from the repository root,
    text output captured, never raising on a non-zero exit."""

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "easl_toolkit.tui.cli", *map(str, args)],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            env=env,
            timeout=timeout,
        )

    return run


@pytest.fixture
def items_csv(tmp_path: Path) -> Path:
    """23 items as CSV with the default column names of ``easl init`` (``id``, ``text``) and two extra columns."""
    from tests.store_helpers import make_items

    path = tmp_path / "items.csv"
    make_items(23).rename(columns={"item_id": "id"}).to_csv(path, index=False)
    return path


@pytest.fixture
def store_project(tmp_path: Path) -> Iterator[object]:
    """A fresh, open project of 23 items with the default hyper-parameters; closed after the test."""
    from tests.store_helpers import new_project

    project = new_project(tmp_path)
    try:
        yield project
    finally:
        project.close()


@pytest.fixture
def tui_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The app's settings file, moved to ``tmp_path/config/tui.json`` (no remembered annotator)."""
    from tests.tui_helpers import isolate_settings

    return isolate_settings(monkeypatch, tmp_path)


@pytest.fixture
def make_tui_project(tmp_path: Path, tui_settings: Path) -> Callable[..., Path]:
    """``make(name="p.easl", n_items=12, hit_size=3, seed=0, annotated=0)``: a project file in ``tmp_path``
    (``tests.tui_helpers.make_project``) with ``annotated`` iterations scored at random; returns its path."""
    import numpy as np

    from tests.tui_helpers import annotate_iteration, make_project

    def make(
        name: str = "p.easl",
        n_items: int = 12,
        hit_size: int = 3,
        seed: int = 0,
        annotated: int = 0,
        annotation_seed: int = 2,
    ) -> Path:
        path = make_project(tmp_path / name, n_items=n_items, hit_size=hit_size, seed=seed)
        rng = np.random.default_rng(annotation_seed)
        for _ in range(annotated):
            annotate_iteration(path, rng)
        return path

    return make


@pytest.fixture
def tui_project(make_tui_project: Callable[..., Path]) -> Path:
    """A project file of 12 items in HITs of 3, nothing annotated, settings isolated."""
    return make_tui_project()


@pytest.fixture(scope="session")
def political_oracle_file() -> Path:
    """``../shared/data/political_150_gold.csv`` beside the repository (the EASL paper's political-spectrum
    oracle; not shipped, see the README); skips the test when it is not there."""
    from easl_toolkit.core.simulate.annotation import POLITICAL_ORACLE_FILE

    path = REPO_ROOT.parent / "shared" / "data" / POLITICAL_ORACLE_FILE
    if not path.is_file():
        pytest.skip(
            f"{POLITICAL_ORACLE_FILE} not found at ../shared/data/ beside the repository (the paper's "
            f"oracle is not shipped: see docs/guides/simulation.md)"
        )
    return path
