"""Other tools' checkpoint formats, above the checkpoint schema: translating their checkpoints into crewpoint's
body, forking them in their own format and handing them to their own tool.

A format's translation targets the body the engine reads (:mod:`crewpoint.checkpoint.schema`: its types and its
version), so it sits above the schema; its read-only stores sit below, with crewpoint's own, and reach the
translation through the format registry (:mod:`crewpoint.providers.formats`) by name. The registry imports this package
when it is first read (:data:`crewpoint.providers.formats.FORMAT_PACKAGES`); it registers each format by name
only: an adapter loads when first asked for.
"""

from __future__ import annotations

from crewpoint.providers.formats import register_format, register_store_copy

register_format("crewai", "crewpoint.formats.crewai.adapter:CREWAI")
register_store_copy("crewpoint.formats.crewai.copy:copy_store")  # it reads crewpoint's stores and CrewAI's
