"""The papers the built-in kinds measure by, as the YAML reference cites them."""

BIASCONNECT = ("BiasConnect: Shukla, Chinchure et al. 2025, *Mitigate One, Skew Another? "
               "Tackling Intersectional Biases in Text-to-Image Models*")
OPENBIAS = ("OpenBias: D'Incà et al., CVPR 2024, *OpenBias: Open-set Bias Detection in "
            "Text-to-Image Generative Models*")
SOCIALCF = ("SocialCounterfactuals: Howard et al., CVPR 2024, *Probing Intersectional Biases "
            "in Vision-Language Models with Counterfactual Examples* (arXiv 2310.02988)")
