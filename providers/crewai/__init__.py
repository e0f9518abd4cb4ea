"""CrewAI's own checkpoint stores, read-only: the one place the storage layer knows CrewAI.

detect (which location is a CrewAI store), json_store and sqlite_store (the read-only providers), listing and
common (the facts a listing shows, masking keys on the way). The translation into crewpoint's body, forks, copies
and runs are CrewAI's format, above the schema (:mod:`crewpoint.formats.crewai`).
"""
