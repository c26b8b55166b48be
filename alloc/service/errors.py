"""The service's refusal of a request: an HTTP status and one line (the
application answers it as ``{"error": "..."}``)."""
from __future__ import annotations


class Refused(Exception):
    """A request the service refuses (status, one line)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


__all__ = ["Refused"]
