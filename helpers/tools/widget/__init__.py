"""The chat widget (helpers.tools.widget.events) and its pure state → HTML rendering (helpers.tools.widget.render). Tools for 07_elephant, "Chat with the elephant"."""

from __future__ import annotations

from helpers.tools.widget.events import MAX_LOG_LINES, ChatWidget
from helpers.tools.widget.render import gauge_html

__all__ = ["ChatWidget", "gauge_html", "MAX_LOG_LINES"]
