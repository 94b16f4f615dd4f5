"""The operator console: a live, keyboard-driven Textual UI over the job store.

Build it with :func:`jobtui.console.app.make_app`; ``jobtui.console.demo``
creates a demo database to try it on.
"""
