"""Grading the book's autograded assignments where a submission's code cannot reach the grader.

* :mod:`~dpfda.teaching.sandbox` runs a notebook's code in a fresh child process and brings back
  plain JSON only (numbers, strings, booleans), then kills the child and every process it started.
* :mod:`~dpfda.teaching.judging` turns those numbers into verdicts: a simulation answer by its whole
  distribution (mean and spread) over many fresh settings, an exact answer at fresh random points.
* :mod:`~dpfda.teaching.grader` is the otter-grader plugin that ties them together: it runs in the
  autograder's own process, reads an assignment's key (which only the autograder zip holds), and
  writes the scores.

Nothing here holds an answer: each assignment's key is instructor material, shipped in that
assignment's autograder zip only.
"""
