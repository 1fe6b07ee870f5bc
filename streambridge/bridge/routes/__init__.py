"""The proxy's handlers, one module per kind of route: a chat over HTTP (chat.py) or WebSocket
(websocket.py), reading a run again (resume.py), and control requests (control.py). What they
share: the route's surfaces (mounted.py), request helpers (requests.py), the upstream request
(upstream_request.py) and starting a relay (streams.py). ``bridge/router.py`` mounts them."""

from __future__ import annotations

from .chat import ChatRoute
from .control import ControlRoutes
from .resume import ResumeRoutes
from .websocket import WebSocketRoute

__all__ = ["ChatRoute", "ControlRoutes", "ResumeRoutes", "WebSocketRoute"]
