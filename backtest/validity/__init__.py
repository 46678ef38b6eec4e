"""Stage 8, checks that a run means what it says: the leakage checks and the judge-validation controls
(mismatched evidence, reruns, prompt variation).
"""
