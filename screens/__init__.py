"""Textual screens: browser, fork confirmation, run progress, help."""
