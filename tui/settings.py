"""The terminal app's per-user settings file: the annotator's name (asked once and remembered) and the scores typed
for a HIT not yet submitted (a draft, so that quitting in the middle of a HIT loses nothing).

The file is ``$XDG_CONFIG_HOME/easl/tui.json`` (``~/.config/easl/tui.json`` when ``XDG_CONFIG_HOME`` is unset), or
the path in ``EASL_TUI_CONFIG``. The name belongs to the person, not to a project: several annotators may work on
the same project file from different accounts, each with their own settings file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from easl_toolkit.core.errors import EaslError


def settings_path() -> Path:
    """Where the settings file lives (see the module docstring)."""
    explicit = os.environ.get("EASL_TUI_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "easl" / "tui.json"


def load_settings() -> dict:
    """The settings as a dict; an absent file gives ``{}``.

    Raises
    ------
    EaslError
        When the file exists but is not a JSON object.
    """
    path = settings_path()
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise EaslError(
            f"{path}:{exc.lineno}: the settings file is not valid JSON ({exc.msg}); fix or delete it."
        ) from exc
    if not isinstance(data, dict):
        raise EaslError(f"{path}:1: the settings file must hold a JSON object; fix or delete it.")
    return data


def save_settings(data: dict) -> None:
    """Write the settings atomically (temporary file in the same directory, then rename)."""
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tui-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def clean_annotator(name: str) -> str:
    """Normalise an annotator name (surrounding white space removed, inner runs collapsed).

    Raises
    ------
    EaslError
        When the name is empty or longer than 64 characters.
    """
    cleaned = " ".join(str(name).split())
    if not cleaned:
        raise EaslError("annotator name: the name is empty; type the name to record with your scores.")
    if len(cleaned) > 64:
        raise EaslError("annotator name: the name is longer than 64 characters; use a shorter one.")
    return cleaned


def remembered_annotator() -> str | None:
    """The annotator name saved earlier, or None."""
    name = load_settings().get("annotator")
    return str(name) if name else None


def remember_annotator(name: str) -> str:
    """Save the (normalised) annotator name and return it."""
    cleaned = clean_annotator(name)
    data = load_settings()
    data["annotator"] = cleaned
    save_settings(data)
    return cleaned


def _draft_key(project: str | os.PathLike, annotator: str) -> str:
    return f"{Path(project).resolve()}::{annotator}"


def save_draft(project: str | os.PathLike, annotator: str, hit_id: str, scores: dict[str, float]) -> None:
    """Remember the scores typed so far for an unsubmitted HIT (one draft per project and annotator)."""
    data = load_settings()
    drafts = data.setdefault("drafts", {})
    if scores:
        drafts[_draft_key(project, annotator)] = {
            "hit_id": str(hit_id),
            "scores": {str(k): float(v) for k, v in scores.items()},
        }
    else:
        drafts.pop(_draft_key(project, annotator), None)
    save_settings(data)


def load_draft(project: str | os.PathLike, annotator: str, hit_id: str) -> dict[str, float]:
    """The draft scores of ``hit_id`` (empty when the draft is for another HIT or there is none)."""
    draft = load_settings().get("drafts", {}).get(_draft_key(project, annotator))
    if not isinstance(draft, dict) or draft.get("hit_id") != str(hit_id):
        return {}
    scores = draft.get("scores", {})
    return {str(k): float(v) for k, v in scores.items()} if isinstance(scores, dict) else {}


def clear_draft(project: str | os.PathLike, annotator: str) -> None:
    """Forget the draft of this project and annotator (after a submission)."""
    data = load_settings()
    if data.get("drafts", {}).pop(_draft_key(project, annotator), None) is not None:
        save_settings(data)
