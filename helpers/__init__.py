"""The map of `helpers/`, the package the Goldfish to Elephant notebooks import. Nothing runs at import time.

Read these, in the order the notebooks teach them (each module's first docstring line names its section):

    01  config.py               every setting, from the environment and .env
        llm.py                  the client: the real anthropic SDK, live or offline
        memory/history.py       StatelessMemory and the one `turn(text)` every stage shares
    02  conversation.py         messages and exchanges as Messages-API dicts
        memory/history.py       HistoryMemory: the list you built in 02, packaged
    03  tokens.py               measured token counts (usage, count_tokens, the local BPE)
        scripts.py              the scripted trip chat the simulations replay
        pricing.py              prices, cost_of and the CostLedger
        simulate.py             the strategy table and the conversation simulator
        plots.py                the plots of 03, 04 and 06
    04  window.py               trim by whole exchanges to a token budget
        summary.py              the rolling summary merge (and fact extraction, used in 05)
        prompts.py              every prompt the helpers send
        retention.py            does each stated fact survive in the summary?
        pending.py              fold dropped turns into the summary within a bound, never losing one
        memory/bounded.py       BoundedMemory: window + summary in MongoDB, resumable
        memory/errors.py        the errors a turn can raise, each saying what to do
        memory/fold.py          the session bookkeeping of a summary fold
    05  embeddings.py           sentence embeddings (MiniLM in numpy via minilm.py, or Voyage)
        structured.py           model output through a forced, schema-checked tool call
        facts.py                per-user facts: dedup, superseded instead of deleted
        facts_worker.py         extraction in a background worker, and its latency
        retrieval/              bm25.py, ranking.py (rrf, cosine top-k), index.py (MemoryIndex),
                                atlas.py ($vectorSearch), inject.py (the tag sanitiser, packing),
                                schema.py and cache.py (the memory document; one user's rows in numpy)
        memory/long_term.py     the long-term retriever BoundedMemory takes; VectorMemory
        budget.py               one context budget shared by window, summary and memories
        longterm.py             turn-level memories with speaker and date
        transcript.py, importer.py  read a dated transcript and import it in one batch
    06  (composes the above)

Plumbing you can skip (first docstring line "Plumbing:"):

    offline/, offline_model.py  the deterministic offline model behind the real SDK
                                (offline/lexicon.py: WordNet 3.0 for its reader, built by offline/wordnet_build.py)
    store.py                    sessions, logs and memories collections
    localserver.py, processes.py  start, lock and stop the local database server
    redact.py, settle.py, consistency.py, cli_checks.py

Tools:

    chat.py                     the terminal chat: `python -m helpers.chat --stage ...`
    widgets/                    the live chat widget (render.py: state to HTML; chat.py: events)
    bench/                      `python -m helpers.bench ...`: one module per benchmark, with its data
                                (longmem*, split_study, reader_eval: `python -m helpers.bench.reader_eval`)
    scoring.py                  answer-in-request, matched on word boundaries
"""

__all__: list[str] = []
