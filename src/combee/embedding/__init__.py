"""Sentence embeddings for the parts that compare texts by meaning: ``topk``'s clusters and
ACE's near-duplicate folding. all-MiniLM-L6-v2 runs on numpy (:mod:`combee.embedding.minilm`);
:mod:`combee.embedding.sentences` picks the embedder a run uses. Nothing here is imported until
a run needs it."""
