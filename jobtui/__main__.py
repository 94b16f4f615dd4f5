"""``python -m jobtui``: the same command line as the ``jobtui`` script."""

from jobtui.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
