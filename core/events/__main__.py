"""``python -m crewpoint.events [--check]``: write (or check) the event catalogue's index from the family modules."""

import sys

from crewpoint.events.types import main

raise SystemExit(main(sys.argv[1:]))
