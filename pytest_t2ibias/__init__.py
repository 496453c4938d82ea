"""pytest-t2ibias: fairness tests for text-to-image models, as pytest checks."""
