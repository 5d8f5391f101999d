"""The front ends of a user: the ``easl`` command line (``tui/cli.py``, ``tui/commands/``) and the Textual app
(``tui/app.py``, ``tui/screens/``); ``docs/ARCHITECTURE.md``, "tui/"."""
