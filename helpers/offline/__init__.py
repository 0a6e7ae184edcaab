"""Plumbing: the offline model, in parts: tokens, faults, the reader, the chat reply, the helper tasks, the model and transport.

- `tokens`    local BPE token counts and the documented framing overheads (03)
- `faults`    injected API faults for reliability tests
- `language`  sentences, stems, synonyms, answer types
- `kinds`     kinds of things and their members ("jazz" is music)
- `person`    who a sentence is about; first/second/third person rewriting; pronouns
- `question`  what a question asks about and the kind of answer it wants
- `statements` statements in a request: sentences, clauses, whose words, about whom
- `ranking`   the answer-or-decline decision: same subject, the thing asked about, a good enough match
- `reader`    the statement that answers a question, said back in second person
- `chat`      the chat reply built from the reader
- `facts`     facts as third-person statements; when two facts clash
- `tasks`     summary, fact extraction, reconciliation
- `model`     request validation, usage, tool use, the httpx2 transport
"""

from .faults import FaultPlan, OfflineAPIError
from .model import MODEL_LABEL, OfflineModel, OfflineTransport
from .tokens import count_text_tokens

__all__ = ["OfflineModel", "OfflineTransport", "OfflineAPIError", "FaultPlan", "MODEL_LABEL", "count_text_tokens"]
