"""Record TTL tests read at a fixed time (support/ttl_tables.py)."""

from support.ttl_tables import fixed_read_clock

__all__ = ["fixed_read_clock"]
