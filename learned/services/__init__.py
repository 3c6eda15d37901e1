"""The bridge between rows and :mod:`scoring.learned`: training data from judgments,
training jobs (create, execute, cancel, resume) and scoring with a trained metric."""
