"""The Label Studio labelling configurations (XML templates, one per HIT layout) and ``layouts.py``, which fills them
in for a project (scale, question, HIT size)."""
