"""Preparing the machine for benchmarks and undoing it: the knobs and how each is set
(knobs.py), the state file written before the first change (state.py), and the restore
(reset.py), which studies' --tune wraps around their runs."""
