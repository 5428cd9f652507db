"""Loading the embedding model ahead of need, so no query waits for it.

A cold `dk-mirror search --offline` with vectors on spends most of its time building the
model's onnxruntime session (a few hundred ms on the 2-core machine), which runs without the
GIL: started in a worker thread as soon as the command knows it will rank with vectors, it
overlaps the imports, the store's opening and the lexical ranking instead of following them
(bench/bench_cold_get.py). A server loads it at startup instead of on its first query.

Both start nothing when the store has no vectors, or vectors of another model: a lexical
search pays one small query here and no thread.
"""

from __future__ import annotations

from ..policy import Mode
from .context import Context
from .search import LOCAL_TOKEN, SearchRequest, embeds


def may_rank_with_vectors(request: SearchRequest, mode: Mode) -> bool:
    """Whether `request` is ranked by the local index (offline, or paging its results) with
    its query embedded: what the store holds decides the rest (`for_one_search`)."""
    local = mode.offline or (request.page_token or "").startswith(LOCAL_TOKEN)
    return local and embeds(request.query)


def for_one_search(ctx: Context, request: SearchRequest, mode: Mode) -> bool:
    """Before running `request` in a process that runs just it: start loading the model
    and embedding its query in the background when the local ranking will use vectors.
    Says whether it started."""
    if not ctx.settings.semantic or not may_rank_with_vectors(request, mode):
        return False  # DK_MIRROR_SEMANTIC=off never loads the model
    state = ctx.store.semantic_state()
    if state is None:
        return False
    if ctx.store.recordings.page(request.key) is not None:
        return False  # a recorded page answers it: nothing is ranked
    from ..semantic import model

    model.warm_for_query(request.query, state.model)
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
