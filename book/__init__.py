"""The book: the notebooks and the docs as one static site that reads without a network,
in a student edition (no answers) and a teacher's edition (answers behind a button)."""
