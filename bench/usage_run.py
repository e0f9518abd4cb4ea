"""One run of the usage bench's crew in a process of its own, as a user runs a crew: ``usage_run.py SIDE STORE``.

The process imports crewpoint, builds the crew, runs it on SIDE (``usage_sides.SIDES``) and ends once its checkpoints
are written (the writer flushes at exit, as in any run); it prints the crew's output.
"""

from __future__ import annotations

import logging
import sys

from usage_sides import SIDES, crew

logging.disable(logging.WARNING)
side, store = sys.argv[1], sys.argv[2]
with SIDES[side]():
    print(crew(store).kickoff())
