"""``Process``: how a crew runs its tasks, spelled as CrewAI spells it (``crewai.process.Process``).

crewpoint runs a crew's tasks in order (``Process.sequential``). ``Process.hierarchical`` (a manager agent that
delegates the tasks) is refused when the crew is made, in one line: running it in order instead would give other
results than the program was written for."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Process(StrEnum):
    """How a crew runs its tasks: ``Process.sequential`` equals ``"sequential"``, as in CrewAI."""

    sequential = "sequential"
    hierarchical = "hierarchical"


class ProcessNotSupported(TypeError):
    """A crew asked for a process crewpoint does not run (one line, raised as it is: not a validation error)."""


def sequential_only(value: Any) -> str:
    """``"sequential"`` for ``Process.sequential`` or its name; anything else is refused in one line."""
    name = value.value if isinstance(value, Process) else value
    if name == Process.sequential.value:
        return Process.sequential.value
    if name == Process.hierarchical.value:
        raise ProcessNotSupported(
            "Crew(process=Process.hierarchical): crewpoint runs a crew's tasks in order; a manager agent delegating "
            "them is not supported: use Process.sequential and give each task its agent"
        )
    raise ProcessNotSupported(f"Crew(process={value!r}): the process is Process.sequential")
