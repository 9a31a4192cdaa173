"""The notebooks' exercises as assignments a teacher can grade (`make assignments`).

Each graded notebook becomes one nbgrader assignment, made from the notebook's own source:
the lesson as it is, every exercise's solution replaced by a cell for the student's code,
and under each graded exercise a check the student runs and hidden tests the teacher grades
with (`graded`, `master`). `course` runs nbgrader on the result: the student notebooks it
releases, and the grading of what the students hand back.
"""
