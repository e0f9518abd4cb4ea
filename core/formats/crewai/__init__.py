"""CrewAI's format above the schema: the one place crewpoint translates, forks and runs CrewAI's checkpoints.

adapter (its :class:`~crewpoint.providers.formats.Format`), body (a dump as a body in crewpoint's schema), fork (a
fork written in CrewAI's format), copy (a masked copy of a store), allowlist and rebuild (the copy CrewAI is
handed), runner (handing a fork to CrewAI with endpoints from the user's environment). CrewAI's stores, which only
read, are :mod:`crewpoint.providers.crewai`.
"""
