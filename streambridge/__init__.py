"""streambridge: translate AI-agent chat streams between frameworks, losslessly and live."""

from __future__ import annotations

from . import codecs, events
from .codecs import StreamError
from .translate import Translator, translate

__all__ = ["StreamError", "Translator", "codecs", "events", "translate"]
__version__ = "0.1.0"
