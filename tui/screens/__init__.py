"""Screens of the terminal app: Annotate, Monitor, Evaluate, Export, help, the file picker and dialogs."""
