"""CrewAI's own checkpoint stores, read and forked in CrewAI's format: the one place crewpoint knows CrewAI.

detect (which location is a CrewAI store), json_store and sqlite_store (the read-only providers), listing and
common (translation into crewpoint's typed body), fork (a fork written in CrewAI's format), copy (a masked copy of
a store) and runner (handing a fork to CrewAI with endpoints from the user's environment).
"""
