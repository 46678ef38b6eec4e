"""Stage 3, text features with no notion of a benchmark: sentence embeddings, catalogued object names,
specific terms and sentences, equivalence rules (same question or not), and the clarity features.
"""
