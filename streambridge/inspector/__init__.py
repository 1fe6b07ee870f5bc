"""The live stream inspector: what each stream's upstream sent and what its client got, side by
side in the browser (``streambridge serve --inspect``, ``streambridge inspect FILE``).

:mod:`.capture` keeps the bytes (the proxy's only cost: two list appends a chunk), :mod:`.analysis`
turns one capture into frames, links, decoded events, text and a timeline when a page asks, and
:mod:`.web` serves the page (plain HTML, CSS and JavaScript in ``static/``) and its data.
"""

from .capture import Inspector, StreamCapture, StreamFacts

__all__ = ["Inspector", "StreamCapture", "StreamFacts"]
