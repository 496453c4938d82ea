"""YAML suites as pytest items: ``file`` (the collector of a ``*.t2i.yaml``) and ``check``
(one item per check x subject x axis, run through its kind)."""
