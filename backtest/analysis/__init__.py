"""Stage 11, reading several runs or raters together: comparisons with Fisher/Holm tests, agreement
between raters, diversity of question sets, and the annotation workflow that validates judges.
"""
