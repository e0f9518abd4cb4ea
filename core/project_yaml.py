"""A project's YAML files read within bounds: a file bigger than :data:`YAML_LIMIT`, with more than
:data:`ALIAS_LIMIT` aliases, or whose aliases expand to more than :data:`VALUE_LIMIT` values (a "billion laughs"
file) is refused before anything is built from it. :mod:`crewpoint.project` names the file in its one-line error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crewpoint.text import format_size

YAML_LIMIT = 1024 * 1024
"""Bytes a project's YAML file may hold (a config of agents' or tasks' settings is a few KiB)."""
ALIAS_LIMIT = 100
"""``*alias`` references a project's YAML file may hold."""
VALUE_LIMIT = 100_000
"""Values a project's YAML file may hold once its aliases are expanded."""


class Refused(ValueError):
    """Why a YAML file is refused, in words that follow its name."""


def read_bounded(path: Path) -> str:
    """The text of ``path``, refused past :data:`YAML_LIMIT` bytes without reading the rest."""
    with path.open("rb") as file:
        raw = file.read(YAML_LIMIT + 1)
    if len(raw) > YAML_LIMIT:
        raise Refused(f"more than {format_size(YAML_LIMIT)}; a project's YAML holds settings, not data")
    return raw.decode("utf-8")


def bounded_load(text: str) -> Any:
    """``yaml.safe_load(text)``, refusing many aliases, or aliases that expand to too many values, before anything
    is built from them."""
    # lazy: only a project with YAML files loads the parser
    import yaml

    class Loader(yaml.SafeLoader):
        aliases = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                self.aliases += 1
                if self.aliases > ALIAS_LIMIT:
                    raise Refused(f"more than {ALIAS_LIMIT} aliases (*name); write the settings out")
            return super().compose_node(parent, index)

    loader = Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_expansion(root: Any) -> None:
    """Count the values under ``root`` with every alias expanded, stopping past :data:`VALUE_LIMIT`."""
    # lazy: only a project with YAML files loads the parser
    import yaml

    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        count += 1
        if count > VALUE_LIMIT:
            raise Refused(f"its aliases expand to more than {VALUE_LIMIT:,} values; write the settings out")
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend((key, value))
