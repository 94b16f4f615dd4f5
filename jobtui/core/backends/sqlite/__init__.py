"""SQLite, the embedded default: the backend (backend.py) and its engine set-up
(engine.py: WAL, busy timeout, BEGIN hooks, NOW()). Only ``jobtui.core.backends``
imports this package; everything else asks the ``Backend`` contract."""
