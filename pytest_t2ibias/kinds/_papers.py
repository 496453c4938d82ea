"""The papers the built-in kinds measure by, as the YAML reference cites them."""

BIASCONNECT = ("BiasConnect: Shukla, Chinchure et al. 2025, *Mitigate One, Skew Another? "
               "Tackling Intersectional Biases in Text-to-Image Models*")
OPENBIAS = ("OpenBias: D'Incà et al., CVPR 2024, *OpenBias: Open-set Bias Detection in "
            "Text-to-Image Generative Models*")
SOCIALCF = ("SocialCounterfactuals: Howard et al., CVPR 2024, *Probing Intersectional Biases "
            "in Vision-Language Models with Counterfactual Examples* (arXiv 2310.02988)")

CLIPSCORE = ("CLIPScore: Hessel et al., EMNLP 2021, *CLIPScore: A Reference-free Evaluation "
             "Metric for Image Captioning*")
VENDI = ("Vendi score: Friedman & Dieng, TMLR 2023, *The Vendi Score: A Diversity Evaluation "
         "Metric for Machine Learning*")
CLIPIQA = ("CLIP-IQA: Wang, Chan & Loy, AAAI 2023, *Exploring CLIP for Assessing the Look and "
           "Feel of Images*")
KID = ("KID: Binkowski, Sutherland, Arbel & Gretton, ICLR 2018, *Demystifying MMD GANs*")
INTERMIT_EVAL = ("InterMit's evaluation (BiasConnect seed 000, Table 1): the share of images "
                 "that still show a person (IsP?) beside each mitigation's bias")
