"""Loading the embedding model ahead of need, so no query waits for it.

A cold `dk-mirror search --offline` with vectors on spends most of its time importing the
model's packages and building its onnxruntime session. The command forks a helper process
that does so as it starts, and asks it for the whole dense ranking here, once it knows the
search ranks with vectors (forked_dense.py); without a helper (no fork on the platform, or a
library caller) a worker thread loads the model and embeds the query, overlapping what of
that runs without the GIL (bench/bench_cold_get.py). A server loads it at startup instead of
on its first query.

Neither is used for a store without vectors (a helper forked already is dismissed): a
lexical search pays one small query here. Vectors of another model are found out by the
helper or the thread, which then load nothing, and the search ranks by words.

A server (`for_serving`) does more in the background: one local search of a fixed question,
so that its first request finds everything a search needs ready (bench/bench_first_search.py:
over MCP stdio, the first call took 5.0x the later ones at once, 2.4x after a second).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from ..errors import InvalidInput
from ..policy import Mode
from .context import Context
from .ranking import embeds, local_dense_limit
from .search import LOCAL_TOKEN, SearchRequest, local_need

if TYPE_CHECKING:
    from .forked_dense import Helper

log = logging.getLogger(__name__)

# A question in English prose, so its search takes the whole hybrid path: the search modules
# imported, the text index's reader open, the vector matrix read, the model run once (its
# first run is slower than the rest). What it finds does not matter, and nothing of it stays
# but those: an offline search records nothing (no recording, history, counter or log line;
# tests/test_model_loading.py), and its embedding is one of the model's QUERY_CACHE entries.
WARM_QUESTION = "how do I keep a page responsive while it loads its data"


def may_rank_with_vectors(request: SearchRequest, mode: Mode) -> bool:
    """Whether `request` is ranked by the local index (offline, or paging its results) with
    its query embedded: what the store holds decides the rest (`for_one_search`)."""
    local = mode.offline or (request.page_token or "").startswith(LOCAL_TOKEN)
    return local and embeds(request.query)


def for_one_search(
    ctx: Context, request: SearchRequest, mode: Mode, helper: Helper | None = None
) -> bool:
    """Before running `request` in a process that runs just it: when the local ranking will
    use vectors, ask `helper` (forked at the command's start) for the dense ranking, or
    without one start loading the model and embedding the query in a thread; a helper not
    needed is dismissed. Says whether either started."""
    if helper is not None and _ask(ctx, request, mode, helper):
        return True
    model_key = _vectors_ranking(ctx, request, mode)
    if model_key is None:
        return False
    from ..semantic import model

    model.warm_for_query(request.query, model_key)
    return True


def for_serving(ctx: Context) -> threading.Thread:
    """Before a server takes requests: in the background, load the model when the store's
    vectors are this model's, and run one local search (WARM_QUESTION), so the first query
    finds the search path ready as the later ones do. Returns the search's thread, which a
    closing Mirror waits for (the store must not close under it)."""
    model_key = _store_vectors(ctx)
    if model_key is not None:
        from ..semantic import model

        # On the embedder's own worker, first: the longest part, and the search below waits
        # for it only when it reaches the query's embedding (a request would too).
        model.warm(model_key)
    # A thread of its own, not the embedder's worker: the lexical half and the matrix read
    # need no model, and a request for them must not queue behind the load.
    thread = threading.Thread(target=_search_once, args=(ctx,), name="warm-search", daemon=True)
    thread.start()
    return thread


def _search_once(ctx: Context) -> None:
    """One offline search of WARM_QUESTION, its result dropped (the warm-up's thread)."""
    from .search import make_request, search

    try:
        search(ctx, make_request(WARM_QUESTION, None, None, None), Mode(offline=True), fetch=False)
    except Exception as exc:  # a store that cannot search: the first request says why
        log.debug("the warm-up search failed (%s): the first request pays for it", exc)


def for_one_answer(
    ctx: Context, query: str, filter_text: str | None, mode: Mode, helper: Helper
) -> bool:
    """Before an answer in a process that runs just it (the CLI): when it will be an
    extractive one ranked with vectors (offline, no answer recorded for the question: it
    quotes `search --offline`'s ranking, answers.ranked), ask `helper` for that ranking's
    dense half; else dismiss it. Says whether it was asked."""
    from . import answers

    try:
        asked = mode.offline and ctx.as_of is None
        quoted = answers.extractive_request(ctx, query, filter_text) if asked else None
        if quoted is not None and embeds(quoted[0]) and _store_vectors(ctx) is not None:
            from . import forked_dense

            text, node = quoted
            limit = local_dense_limit(answers.EXTRACT_FROM)
            forked_dense.ask(helper, ctx.settings, text, limit, node)
            return True
    except InvalidInput:
        pass  # an empty question or a bad filter: the answer says so
    helper.dismiss()
    return False


def _store_vectors(ctx: Context) -> str | None:
    """The model key of the store's vectors when a local ranking may use them, else None."""
    if not ctx.settings.semantic:
        return None  # DK_MIRROR_SEMANTIC=off never loads the model
    state = ctx.store.semantic_state()
    return state.model if state is not None else None


def _vectors_ranking(ctx: Context, request: SearchRequest, mode: Mode) -> str | None:
    """The model key of the store's vectors when the local ranking of `request` uses them,
    else None."""
    if not may_rank_with_vectors(request, mode):
        return None
    model_key = _store_vectors(ctx)
    if model_key is None:
        return None
    if ctx.store.recordings.page(request.key) is not None:
        return None  # a recorded page answers it: nothing is ranked
    return model_key


def _ask(ctx: Context, request: SearchRequest, mode: Mode, helper: Helper) -> bool:
    """Ask `helper` for `request`'s dense ranking when the search needs one; else dismiss
    it (it stops loading at once, and frees the other core)."""
    try:
        # An as-of read ranks the store as it was: the helper reads it as it is now.
        if ctx.as_of is None and _vectors_ranking(ctx, request, mode) is not None:
            from . import forked_dense

            limit = local_dense_limit(local_need(request))
            forked_dense.ask(helper, ctx.settings, request.query, limit, request.node)
            return True
    except InvalidInput:
        pass  # a page token that is not ours: the search says so
    helper.dismiss()
    return False
