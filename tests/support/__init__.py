"""Helpers and fixtures the test modules share (tests/README.md).

A test module imports from here, never from another test module; conftest.py
loads this package's fixture modules as plugins.
"""
