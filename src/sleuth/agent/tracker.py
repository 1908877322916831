"""The tracker moved below the tools to :mod:`sleuth.tracker`; this name keeps old imports."""

from sleuth.tracker import Tracker

__all__ = ["Tracker"]
