"""Dense embeddings for hybrid local search (the optional `semantic` extra).

The only package that imports numpy, onnxruntime, tokenizers and the packaged model; nothing
outside it imports them, and it is imported only when the semantic tier is used, so the base
install never loads them. `model.status()` says whether the extra is installed.
"""

import os
import threading

# numpy loads OpenBLAS, which starts a thread per core when it loads: ~30 ms of CPU and ~70 ms
# of a cold search's wall time on the 2-core machine under load, for products this package
# never asks it for (matrix.py scores with einsum, in the calling thread). Set before any
# module here imports numpy; a value the user set wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# numpy's modules import one another while its C extension initialises: two threads importing
# it at once (a server's model load, onnxruntime importing numpy, and its first search reading
# the vectors) can each hold a module the other needs, and Python then hands one of them a
# half-made one (ImportError: partially initialized module 'numpy._core._multiarray_umath',
# seen by bench/bench_first_search.py as a failed first search). Every import that may be the
# process' first of numpy holds this lock; a search that waits on it needs the model anyway.
FIRST_IMPORTS = threading.Lock()
