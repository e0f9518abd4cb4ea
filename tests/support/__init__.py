"""Helpers shared by the tests, the benches and the scripts: what the machine provides (``systems``), waiting on
events instead of the clock (``waiting``), reading what a widget holds instead of wrapped screen text
(``reading``), and the ``crewpoint`` command as a test runs it (``cli``)."""
