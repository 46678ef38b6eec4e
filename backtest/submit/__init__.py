"""Stage 4, from a submission to a frozen set: the freeze gates, sealing, and the append-only ledger."""
