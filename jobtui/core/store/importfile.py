"""Reading an import file (``jobtui import``) without letting it exhaust the machine.

An export file is a flat list of small mappings (depth 4). What is read is
bounded before it is trusted:

- the file: a regular file (or ``-``, stdin) of at most ``MAX_BYTES`` (a FIFO
  or a device such as /dev/zero is opened without blocking and refused before
  anything is read, so nothing blocks or reads forever);
- JSON or YAML: at most ``MAX_DEPTH`` levels of nesting and ``MAX_NODES`` values,
  counted as the data would be expanded, so YAML aliases ("billion laughs")
  are refused early, and at most ``MAX_ALIASES`` aliases;
- a YAML number too long to convert, or any other value PyYAML cannot build, is
  bad input too.

Every refusal is an InvalidInput (exit 2, one line); nothing was written yet.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from typing import IO, Any

import yaml
from yaml.nodes import MappingNode, Node

from jobtui.core.errors import InvalidInput

MAX_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 1_000_000
MAX_ALIASES = 1_000


class _Limit(Exception):
    """A YAML document went over one of the limits (the message says which)."""


def read_definitions(path: str) -> Any:
    """The content of an export file (JSON or YAML; ``-`` is stdin), bounded."""
    label = "stdin" if path == "-" else repr(path)
    content = _read_text(path, label)
    try:
        data = json.loads(content)
    except RecursionError:
        raise _too_deep(label) from None
    except ValueError:
        data = _load_yaml(content, label)
    check_shape(data, label)
    return data


def check_shape(data: Any, label: str = "import") -> None:
    """Refuse data nested deeper than MAX_DEPTH or holding more than MAX_NODES values.

    Shared sub-structures (YAML aliases) are counted at every place they appear,
    as anything that reads the data would see them; the walk stops at the limit.
    """
    nodes = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise InvalidInput(
                f"invalid import file {label}: more than {MAX_NODES:,} values (YAML aliases "
                "counted where they are used); split it into smaller files"
            )
        if isinstance(value, dict):
            children: Any = [*value.keys(), *value.values()]
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        if depth >= MAX_DEPTH and children:
            raise _too_deep(label)
        stack.extend((child, depth + 1) for child in children)


def _too_deep(label: str) -> InvalidInput:
    return InvalidInput(
        f"invalid import file {label}: nested more than {MAX_DEPTH} levels deep (an export "
        "is a list of jobs, 4 levels)"
    )


def _read_text(path: str, label: str) -> str:
    too_big = InvalidInput(
        f"import file {label} is larger than {MAX_BYTES // (1024 * 1024)} MiB; split it into "
        "smaller files"
    )
    try:
        if path == "-":
            stream: IO[str] = sys.stdin
            content = stream.read(MAX_BYTES + 1)
        else:
            # O_NONBLOCK: opening a FIFO nobody writes to returns at once (and is refused)
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            try:
                info = os.fstat(fd)
            except OSError:
                os.close(fd)
                raise
            if not stat.S_ISREG(info.st_mode):
                os.close(fd)
                raise InvalidInput(
                    f"cannot read import file {label}: not a regular file (a directory, FIFO or "
                    "device); for a stream give - and pipe it to stdin"
                )
            if info.st_size > MAX_BYTES:
                os.close(fd)
                raise too_big
            with open(fd, encoding="utf-8") as fh:
                content = fh.read(MAX_BYTES + 1)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InvalidInput(f"cannot read import file {label}: {reason}") from None
    if len(content) > MAX_BYTES:
        raise too_big
    return content


def _load_yaml(content: str, label: str) -> Any:
    loader = _BoundedLoader(content)
    try:
        return loader.get_single_data()
    except _Limit as exc:
        raise InvalidInput(f"invalid import file {label}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise InvalidInput(
            f"invalid import file {label}{where}: expected JSON or YAML as `jobtui export` "
            "writes it"
        ) from None
    except RecursionError:
        raise _too_deep(label) from None
    except (ValueError, TypeError, OverflowError) as exc:
        # e.g. an integer of more digits than Python converts, a date out of range
        reason = " ".join(str(exc).split())[:120]
        raise InvalidInput(
            f"invalid import file {label}: a value cannot be read ({reason})"
        ) from None
    finally:
        loader.dispose()


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with limits on nesting, values, aliases and merged keys.

    Nesting, values and aliases are counted while the document is composed,
    before anything is built; the pairs a merge key (``<<: *a``) copies into a
    mapping are counted as each mapping is flattened.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0
        self._aliases = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise _Limit(f"more than {MAX_ALIASES} aliases (*name)")
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise _Limit(f"more than {MAX_NODES:,} values")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise RecursionError
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def flatten_mapping(self, node: MappingNode) -> None:
        super().flatten_mapping(node)
        self._nodes += len(node.value)
        if self._nodes > MAX_NODES:
            raise _Limit(f"more than {MAX_NODES:,} values (merge keys << counted)")
