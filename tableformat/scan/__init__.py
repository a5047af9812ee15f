"""The read path: planned data files read into Arrow by field id (planning itself is tableformat.live_set)."""
