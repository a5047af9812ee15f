"""The ``tablefmt`` command line (installed as tableformat.cli); the entry point is cli/main.py."""
