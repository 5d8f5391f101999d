"""Opt-in oracle tests: our metrics against RSMTool, irrCAC and krippendorff (``make test-oracle``).

The default ``make test`` does not collect anything here: the test module is named ``oracle_checks.py``, which
does not match pytest's ``test_*.py`` pattern, and ``make test-oracle`` passes it to pytest explicitly. The peer
packages live in their own virtual environment (``.cache/oracle-venv``); ``peers.py`` runs there in a subprocess
and returns their numbers as JSON, so neither environment imports the other's packages.
"""
