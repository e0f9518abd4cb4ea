"""Helpers shared by the tests, the benches and the scripts: what the machine provides (``systems``), waiting on
events instead of the clock (``waiting``) and reading what a widget holds instead of wrapped screen text
(``reading``)."""
