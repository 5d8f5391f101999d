"""Domain errors raised by ``core``: what is wrong with the input or the project, never which flag to pass.

The tree follows httpx's (``encode/httpx:httpx/_exceptions.py``): one base class, a few subclasses that carry the
data a front end needs to word its own hint. Front ends catch ``EaslError`` in one place: the CLI prints the
message and exits 1; the Label Studio plugin stores it as a reject reason; the terminal app shows it as a notice.
``ValueError`` stays the error for programming mistakes (bad array shapes, unknown options) inside ``core``.

::

    EaslError
    ├── InputError              a file or record given by the user is invalid (file, line, field)
    │   └── InvalidRows         a batch of annotations or items has invalid rows (all listed)
    ├── HyperParameterError     a project setting is out of range (field, value, what it needs)
    └── ProjectFileError        the project file is missing, damaged, locked or of another kind (path, problem)
        └── SchemaVersionError  the project file's schema is newer or older than this version understands
"""

from __future__ import annotations

import os
from collections.abc import Sequence


class EaslError(Exception):
    """A problem with the user's input or project; the message is one sentence naming file, line and field."""


class InputError(EaslError):
    """An input file or record is invalid.

    Parameters
    ----------
    message : str
        The full sentence, naming the location (``file:line``) and the field.
    path, line, field : optional
        The location, for front ends that point at it.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str] | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field


class InvalidRows(InputError):
    """Some rows of a batch are invalid; ``messages`` lists one located sentence per bad row."""

    def __init__(
        self, message: str, *, messages: Sequence[str] = (), path: str | os.PathLike[str] | None = None
    ) -> None:
        super().__init__(message, path=path)
        self.messages = list(messages)


class HyperParameterError(EaslError):
    """A project setting is invalid: ``field`` has ``value`` but needs ``need``."""

    def __init__(self, field: str, value: object, need: str, *, source: str | None = None) -> None:
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{field} = {value!r}: {need}")
        self.field = field
        self.value = value
        self.need = need


class ProjectFileError(EaslError):
    """The project file at ``path`` cannot be used: ``problem`` says why (missing, damaged, locked, not a project)."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


class SchemaVersionError(ProjectFileError):
    """The project file's schema version ``found`` is not one this version can open (``expected``)."""

    def __init__(self, path: str | os.PathLike[str], found: int, expected: int) -> None:
        if found > expected:
            problem = (
                f"the project file has schema version {found}, newer than this version of easl-toolkit "
                f"understands ({expected}); upgrade easl-toolkit"
            )
        else:
            problem = (
                f"the project file has schema version {found}; this version expects {expected}. A command that "
                "writes the file (easl next, easl ingest, easl serve) upgrades it in place; read-only commands "
                "cannot"
            )
        super().__init__(path, problem)
        self.found = found
        self.expected = expected


class UnsupportedByModel(EaslError):
    """The project's model does not offer what was asked (e.g. annotator diagnostics of a model without
    annotators); ``method`` is the project's method, ``what`` what was asked, ``needs`` the method that has it."""

    def __init__(self, method: str, what: str, needs: str) -> None:
        self.method, self.what, self.needs = method, what, needs
        super().__init__(f"{what} needs the method {needs}, not {method}")
