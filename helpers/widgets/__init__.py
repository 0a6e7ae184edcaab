"""The chat widget (helpers.widgets.chat) and its pure state → HTML rendering (helpers.widgets.render). Taught in 06_elephant, "A scripted demo, through the widget"."""

from __future__ import annotations

from .chat import MAX_LOG_LINES, ChatWidget
from .render import gauge_html

__all__ = ["ChatWidget", "gauge_html", "MAX_LOG_LINES"]
