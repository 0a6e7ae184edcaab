"""Long conversations: recall against raw-turn baselines, and the budget split. Tools for further/05_long_conversations, "Long conversations, measured".

`methods.py` builds each method's request (`baselines.py` the raw-turn ones), `command.py` is
`python -m helpers.bench longmem`, `data.py` (with `pools.py`, `topics.py` and `chatter.py`) generates the seeded
corpus, `split_study.py` scores budget allocation policies.
"""
