"""Dense embeddings for hybrid local search (the optional `semantic` extra).

The only package that imports numpy, onnxruntime, tokenizers and the packaged model; nothing
outside it imports them, and it is imported only when the semantic tier is used, so the base
install never loads them. `model.status()` says whether the extra is installed.
"""
