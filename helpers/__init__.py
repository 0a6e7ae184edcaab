"""The map of `helpers/`, the package the Goldfish to Elephant notebooks import. Nothing runs at import time.

Three wings. Each module's first docstring line names the notebook section that teaches it ("Taught in …"),
or says it is plumbing ("Plumbing:") or a tool ("Tools:"); `tests/test_layout.py` checks that the map, the
docstrings and the folders agree.

THE TAUGHT CORE, in notebook order (read these; "further/NN" is a going-further notebook, notebooks/further/):

    01  config.py               every setting, from the environment and .env
        llm.py                  the client: the real anthropic SDK, live or offline
        memory/history.py       StatelessMemory and the one `turn(text)` every stage shares
        memory/errors.py        the errors a turn can raise, each saying what to do
    02  conversation.py         messages and exchanges as Messages-API dicts
        memory/history.py       HistoryMemory: the list you built in 02, packaged
    03  tokens.py               measured token counts (usage, count_tokens, the local BPE)
        pricing.py              prices, cost_of and the CostLedger
        memory/caching.py       prompt-cache breakpoints; CachedHistoryMemory (the history list, cached); the
                                cache-aware layout per model (a larger window where only it is cacheable)
        sim/                    scripts.py (the scripted trip chat), strategies.py (the strategy table),
                                simulate.py (the simulator), plots.py (the plots of 03, 04 and further/02, 06)
    04  prompts.py              every prompt the helpers send, the block tags and their one sanitiser
        memory/window.py        trim by whole exchanges to a token budget
        memory/summary.py       the rolling summary merge
        memory/retention.py     the facts stated in dropped turns, and does each survive in the summary?
        memory/structured.py    model output through a forced, schema-checked tool call
        memory/retriever.py     the hook a later stage plugs into a bounded turn (the protocol)
        memory/pending.py       fold dropped turns into the summary within a bound, never losing one (further/03)
        memory/fold.py          the session bookkeeping of a summary fold
        memory/commit.py        commit an exchange under the version guard; rebuild from the logs
        memory/state.py         the session as the next turn sees it (`--show-state`) and the token gauge
        memory/bounded.py       BoundedMemory: window + summary in MongoDB, resumable
    05  memory/facts.py         per-user facts: dedup, superseded instead of deleted
        memory/facts_worker.py  extraction in a background worker, and its latency (further/04)
        memory/long_term.py     LongTermMemory, the retriever BoundedMemory takes; VectorMemory
        memory/remember.py      its writes after the commit, retried on failure, finished after a crash
        memory/forget.py        forget_user: erase one user in every collection (`--forget-user`; further/04);
                                a running memory never writes an erased user back
        retrieval/              embeddings.py (MiniLM in numpy via minilm.py, or Voyage), schema.py (the memory
                                document, the turn unit), bm25.py, ranking.py (rrf, cosine top-k), index.py (MemoryIndex:
                                the per-user cache, search; writes.py: store memories, index turns; lookups.py: by
                                hash, source or nearest vector),
                                inject.py (the one injector: the dated memory block, packing by value per
                                token); plumbing: cache.py and columns.py (a user's rows as arrays), postings.py
                                (BM25 postings), users.py (the users a process holds, capped by INDEX_CACHE_MB),
                                snapshot.py (their index files), coarse.py (the coarse lists of a large
                                user), changes.py (the change log that keeps processes coherent), atlas.py
    06  memory_tool/                memory the model keeps itself: paths.py (confined to /memories), views.py,
                                commands.py (the six commands, documented texts), storage.py (one document per
                                user, version guard, audit trail), backend.py (MongoMemoryTool, the SDK's
                                BetaAbstractMemoryTool), loop.py (the tool_runner loop of a turn), stage.py
                                (MemoryToolMemory: `--stage memory_tool`)
    07  (the capstone: the learner's own turn(), scored against VectorMemory)
    further/05 (long conversations):
        memory/budget.py        one context budget shared by window, summary and memories
        memory/transcript.py    read a dated transcript; memory/importer.py imports it (`--import`)
        retrieval/names.py      the people of a conversation as a filter, not search words (MemoryIndex.search)
    further/07 (the platform's memory):
        memory_tool/platform.py compaction that fires, the memory tool with context editing, pinned memory

PLUMBING you can skip (first docstring line "Plumbing:"):

    db/                         store.py (sessions, memories; opening the store), logs.py (the append-only log),
                                checks.py (ids and fields every query passes, what BSON can store), server.py,
                                instance.py, launch.py and processes.py (the local database server), auth.py (its
                                one user and password), health.py (a full disk, named), scrub.py (no byte of an
                                erased user left), redact.py, crash.py (named crash points for the kill tests)
    offline/                    the deterministic offline stand-in model behind the real SDK, and the Messages
                                API contract it keeps (contract.py: the rules; catalog.py: the models)

TOOLS built on the core:

    chat.py                     `python -m helpers.chat --stage ...`: runs tools/chat.py
    tools/                      chat.py (the terminal chat, with cli_checks.py, settle.py, erase.py (--forget-user)
                                and consistency.py: a session checked against its logs), widget/ (the live chat widget: render.py,
                                state to HTML; events.py, clicks and threads), git_clean.py (a saved run leaves
                                `git status` clean; `run.py lab` installs it)
    exercises/                  the learner's exercises: check.py (`check(id, fn)`: the check that teaches, the
                                package's function when a blank is left), registry.py, and one module per lesson (each
                                lesson's cases and hints; the solutions are in notebooks/solutions/): lesson02.py,
                                lesson03.py, lesson04.py, lesson05.py, lesson06.py, lesson07.py
    bench/                      `python -m helpers.bench ...` (__main__.py, cli.py, common.py): one module per
                                benchmark: cost.py (with cost_table.py: every strategy side by side; cost_pace.py: pace and
                                TTL; cost_floor.py: the floor of the comparison; cost_report.py: provenance,
                                cost.md; same_batches.py: one embedding per batch across its runs), compare.py,
                                kinds.py (who decides what to remember: application, model, platform; 06),
                                overhead.py, load.py (with users.py: many users in one process), recall.py,
                                retrieval.py (with latency.py and synthetic.py: cold start, latency and RSS at
                                scale; scale_table.py: docs/benchmarks.md's table of both; coarse_real.py: the coarse
                                lists against exact ranking on real conversations), longmem/ (long
                                conversations: methods.py with baselines.py; floor.py chooses the relevance
                                floor), reader_eval.py (the offline reader), quote_eval.py (its
                                quote when it cannot answer); scoring.py (answer-in-request, and
                                supersession-aware); results.py (the results files docs/results/*.json: load, n
                                and 95% intervals, provenance); published.py (`all`: every results file, its
                                command and the modules it measures); longmem_page.py (docs/longmem.md from them)
"""

__all__: list[str] = []
