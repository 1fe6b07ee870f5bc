"""A configured route as its handlers see it: its client's surface (the target protocol's), its
upstream's (the source protocol's), and the response headers every kind of route shares."""

from __future__ import annotations

from aiohttp import web

from ... import codecs
from ...codecs.framing import Framing
from ..config import Route
from ..cors import Cors

__all__ = ["RUN_ID_HEADER", "Mounted"]

#: the response header naming a stream's run on a proxy with a run log (for ``runs/<id>/stream``)
RUN_ID_HEADER = "X-Streambridge-Run-Id"


class Mounted:
    """The base of each kind of route's handlers (chat, resume, control, WebSocket)."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self.surface = codecs.get(route.target).http  # what the route's clients speak
        self.source = codecs.get(route.source).http  # what its upstream speaks
        self.cors = Cors(route.cors_origins, (*self.surface.exposed_headers, RUN_ID_HEADER))

    def stream_headers(self, request: web.Request, framing: Framing) -> dict[str, str]:
        """The headers of a stream to a client of the route: its protocol's, then CORS."""
        headers = codecs.get(self.route.target).stream_headers(framing)
        headers.update(self.cors.headers(request))
        return headers
