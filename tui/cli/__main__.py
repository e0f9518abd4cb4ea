"""``python -m crewpoint.tui.cli``."""

from crewpoint.tui.cli import run

run()
