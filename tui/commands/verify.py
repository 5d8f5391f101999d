"""``easl verify``: replay the observation log and compare with the cached state."""
from __future__ import annotations

import argparse


def register(subparsers) -> None:
    """Add the ``verify`` sub-command to the ``easl`` parser."""
    p = subparsers.add_parser(
        "verify", help="replay the log and compare with the cached state",
        description="Replay the whole observation log from scratch and compare the result with the cached model "
                    "state (largest absolute difference, ok within 1e-9), the live-observation index and the HIT "
                    "statuses. Exit 0 when everything agrees, 1 otherwise.")
    p.add_argument("project", metavar="PROJECT", help="the project file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``easl verify``; returns the exit status (user errors raise ``UserError``)."""
    from core.store import Project

    with Project.open(args.project, readonly=True) as project:
        result = project.verify()
    if result["ok"]:
        print(f"ok: the cached state equals the replay of {result['n_observations']} live observations "
              f"({result['n_log_records']} log records; max abs diff {result['max_abs_diff']:.3g})")
        return 0
    problems = []
    if result["max_abs_diff"] > result["tolerance"]:
        worst = ", ".join(f"{k} {v:.3g}" for k, v in result["arrays"].items() if v > result["tolerance"])
        problems.append(f"cached state differs from the replay by up to {result['max_abs_diff']:.3g} ({worst})")
    if not result["live_ok"]:
        problems.append("the live-observation index differs from the log")
    if not result["seq_ok"]:
        problems.append("the cached state does not reflect the end of the log")
    if not result["hits_ok"]:
        problems.append("some HIT statuses disagree with the live observations")
    print(f"{args.project}: verification FAILED: " + "; ".join(problems))
    return 1
