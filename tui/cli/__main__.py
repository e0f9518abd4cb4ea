"""``python -m crewpoint.tui.cli``."""

from crewpoint.tui.cli import main

main()
