"""Tools: built on the taught core, the terminal chat (`python -m helpers.chat`) and the live chat widget.

`chat.py` is the terminal chat (with `cli_checks.py`, its argument checks, and `settle.py`, settling a turn's
log entries); `widget/` is the ipywidgets chat of 06 (`render.py`: state to HTML; `events.py`: clicks and threads).
"""
