"""Memory strategies behind one `turn(text)` interface: stateless, history list, bounded, vector. Taught in 04_bounded_memory_mongodb, section 'One turn, arrow by arrow'.

Read in this order: history.py (01, 02: the turn interface, the goldfish, the history list), caching.py (03:
prompt-cache breakpoints, the history list with caching on), bounded.py (04:
window + rolling summary in MongoDB; commit.py saves each exchange, state.py shows the session, fold.py holds
its session bookkeeping), recall.py and long_term.py (05:
long-term memory as a retriever the bounded memory calls; VectorMemory wires the two; remember.py writes it after
each commit and finishes what a crash left). errors.py says what a
failed turn tells the user.
"""

from helpers.memory.bounded import BoundedMemory, session_id_from_file
from helpers.memory.caching import CachedHistoryMemory, reuses_prefix, with_cache_breakpoints
from helpers.memory.errors import EmptyMessageError, SessionConflict, TurnError
from helpers.memory.history import HistoryMemory, StatelessMemory, TurnResult, check_user_text, reply_text
from helpers.memory.long_term import LongTermMemory, VectorMemory
from helpers.memory.retriever import Recall, Retriever

__all__ = [
    "TurnResult",
    "TurnError",
    "EmptyMessageError",
    "SessionConflict",
    "StatelessMemory",
    "HistoryMemory",
    "CachedHistoryMemory",
    "with_cache_breakpoints",
    "reuses_prefix",
    "BoundedMemory",
    "VectorMemory",
    "LongTermMemory",
    "Recall",
    "Retriever",
    "check_user_text",
    "reply_text",
    "session_id_from_file",
]
