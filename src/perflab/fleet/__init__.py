"""Fleet mode: one study on every node of a farm, through its batch system, into one store.

``submit`` writes one batch script and submits it once per node (Slurm job array); every task
runs ``perflab STUDY ... --db URL`` on its node, and its campaign carries the fleet name and slot
as labels. ``status`` joins the batch system's view with the store's, ``collect`` merges per-node
SQLite shards, ``report`` groups hosts by platform and finds slow nodes among their peers.
"""
