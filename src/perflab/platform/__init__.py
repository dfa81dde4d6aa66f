"""Everything that reads the machine: topology, metadata, feature probes."""
