"""Rendering of reports: terminal (rich, with an injected console) and, separately, HTML.
Pure apart from writing to the console or file it is given."""
