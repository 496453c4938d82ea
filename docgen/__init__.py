"""The suite's JSON Schema and docs/yaml-reference.md, generated from the check kinds and the
loader's keys. Not part of the installed plugin: run from the repository
(``python -m docgen.reference --write``)."""
