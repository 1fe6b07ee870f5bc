"""What the commands' options share: limits checked when the command line is parsed."""

from __future__ import annotations

PORT_MIN, PORT_MAX = 0, 65535
