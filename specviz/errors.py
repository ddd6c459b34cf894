"""The one exception type the library raises for bad input."""


class SpecvizError(ValueError):
    """A user-facing error: the message is meant to be shown as is, on one line."""
