"""The course's tools: the commands around the notebooks and the protocol they share.

``lab`` (``attn-course lab``), ``execute`` (re-execute notebooks: the only way outputs
change), ``copies`` (``sync-copies``: the lectures' teaching copies of package code),
``exercises`` (``make-exercises``: exercises/ from solutions/), ``generate_cli``
(``attn-course generate``) and ``protocol`` (the cell tags, solution markers and metadata
keys that these tools and the grader read). ``attn_course/__main__.py`` dispatches the
commands. Importing this package imports nothing.
"""
