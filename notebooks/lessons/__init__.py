"""What the lessons (the notebooks in `notebooks/`) share: their exercises' hidden answers,
the claims their prose checks, their tables, figures and traffic printouts, the
deployments they start, the recordings of their live parts, and the runner that executes
them headless (for `make report`, the book and the tests).

Installed with the `notebooks` extra (`pip install '.[notebooks]'`), so a notebook
imports it as any package: `from lessons.claims import claim`.
"""
