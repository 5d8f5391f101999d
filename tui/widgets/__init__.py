"""Widgets of the terminal app: the virtualised item table, plotext charts and the score editor row."""
