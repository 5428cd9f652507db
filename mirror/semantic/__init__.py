"""Dense embeddings for hybrid local search (the optional `semantic` extra).

The only package that imports numpy, onnxruntime, tokenizers and the packaged model; nothing
outside it imports them, and it is imported only when the semantic tier is used, so the base
install never loads them. `model.status()` says whether the extra is installed.
"""

import os

# numpy loads OpenBLAS, which starts a thread per core when it loads: ~30 ms of CPU and ~70 ms
# of a cold search's wall time on the 2-core machine under load, for products this package
# never asks it for (matrix.py scores with einsum, in the calling thread). Set before any
# module here imports numpy; a value the user set wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
