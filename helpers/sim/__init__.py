"""Simulated conversations: the scripted trip chat, the simulator and its strategy table, the plots. Taught in 03_context_window_overflow, "The cost of resending everything".

Read `scripts.py` (what is replayed), then `strategies.py` (the strategy table: every memory by name), then
`simulate.py` (tokens and USD per turn), then `plots.py`.
"""
