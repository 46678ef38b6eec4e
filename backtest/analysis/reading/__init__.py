"""Careful reading, and judges measured against it: blinded annotation, agreement with the readers, validity cards.

``annotate`` exports blinded items (or arena pairs) and imports filled sheets;
``validate`` measures a judge against readers' labels; ``cards`` keeps each judge's
measured validity, printed next to every rate it labels.
"""
