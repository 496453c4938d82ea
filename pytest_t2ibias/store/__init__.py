"""The store: images and answers on disk, and the request layer in front of them.

``cache`` (content-addressed entries, atomic writes, per-key claims), ``remote`` (a shared
read-through tier with the same verbs, as Hypothesis' ``MultiplexedDatabase`` wraps stores),
``write_behind`` (encoding and writing on a few threads while the next batch computes),
``admin`` (``cache stats`` / ``cache prune``) and ``request_layer`` (memo, dedupe, batching).
"""
