"""Screens of the operator console."""
