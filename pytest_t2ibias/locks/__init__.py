"""Lock files: what an LLM chose once, frozen beside the suite so a run needs no LLM.

``counterfactual`` (``<suite>.t2i.lock.json``: counterfactual phrasings), ``bgps``
(``<suite>.t2i.bgps.lock.json``: the prompts a BGPS search found) and ``openbias``
(``<suite>.t2i.openbias.lock.json``: the biases proposed for each caption), each its own schema
over what they share (``_file``: the path beside the suite, the LLM's name and fingerprint, the
atomic write under a file lock); none borrows another's helpers. Under ``protocol: paper``
each is its own file (``x.t2i[.<kind>].paper.lock.json``, ``_file.lock_path``), never read by a
gate run nor the gate's by a paper run.
"""
