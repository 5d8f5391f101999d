"""Errors shown to users: one clear sentence naming the file, line and field."""


class UserError(Exception):
    """A problem with the user's input or project; the CLI prints it and exits with status 1."""
