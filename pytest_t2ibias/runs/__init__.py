"""Saved runs and their comparison: ``saved`` (``--t2i-save``, where runs live), ``compare``
(figures matched between two runs, ``--t2i-compare-fail`` criteria) and ``table`` (the
comparison drawn for the terminal)."""
