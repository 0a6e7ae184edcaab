"""Long conversations: recall against raw-turn baselines, and the budget split. Tools for 05_vector_memory, "Which retrieval wins? Measure it".

`methods.py` builds each method's request, `command.py` is `python -m helpers.bench longmem`, `data.py` (with
`pools.py` and `chatter.py`) generates the seeded corpus, `split_study.py` scores budget allocation policies.
"""
