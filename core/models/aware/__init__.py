"""The annotator-aware model, the default of ``easl init``: each annotator's offset, slope and reliability,
each item's ambiguity (``fit.py``: the model and its EM fit), the model behind the store's interface
(``model.py``), the allocation of the next HITs (``alloc.py``), the posterior's rank figures and stopping rule
(``posterior.py``, ``ranks.py``), the annotators' diagnostics (``diagnostics.py``, ``clickers.py``), their noise
(``noise.py``), the observations (``data.py``) and the bounded scale (``scale.py``). Importing the package
loads none of them (SciPy stays unloaded until a module that needs it is imported).
"""
