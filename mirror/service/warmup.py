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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InvalidInput
from ..policy import Mode
from .context import Context
from .ranking import embeds, local_dense_limit
from .search import LOCAL_TOKEN, SearchRequest, local_need

if TYPE_CHECKING:
    from .forked_dense import Helper


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


def for_serving(ctx: Context) -> bool:
    """Before a server takes requests: start loading the model in the background when the
    store's vectors are this model's, so the first query finds it loaded. Says whether it
    started."""
    if not ctx.settings.semantic:
        return False
    state = ctx.store.semantic_state()
    if state is None:
        return False
    from ..semantic import model

    model.warm(state.model)
    return True


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
