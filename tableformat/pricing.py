"""What requests and storage cost, in US dollars: the price table of a table's options (``maintenance.cost.*``),
S3 Standard's public prices in us-east-1 by default (docs/cost.md). Sums are exact (Decimal) until they are
reported."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from tableformat.io.metered import DELETE, LIST, PUT
from tableformat.options import (
    COST_DELETE_PER_1000,
    COST_GET_PER_1000,
    COST_LIST_PER_1000,
    COST_PUT_PER_1000,
    COST_STORAGE_GB_MONTH,
    TableOptions,
)

GB = 2**30
"""Bytes of the GB S3 bills storage by (a GB-month: 2^30 bytes kept for a month)."""


@dataclass(frozen=True, slots=True)
class PriceTable:
    """Prices in US dollars: per 1,000 requests of each kind (GET's covers HEAD and every kind not named), and per
    GB-month of storage."""

    put_per_1000: Decimal
    list_per_1000: Decimal
    get_per_1000: Decimal
    delete_per_1000: Decimal
    storage_gb_month: Decimal

    @classmethod
    def of(cls, options: TableOptions) -> PriceTable:
        """The table's prices (each option's default where unset)."""
        return cls(
            put_per_1000=options.require(COST_PUT_PER_1000),
            list_per_1000=options.require(COST_LIST_PER_1000),
            get_per_1000=options.require(COST_GET_PER_1000),
            delete_per_1000=options.require(COST_DELETE_PER_1000),
            storage_gb_month=options.require(COST_STORAGE_GB_MONTH),
        )

    def per_1000(self, kind: str) -> Decimal:
        """The price of 1,000 requests of ``kind`` (LIST, GET, HEAD, PUT, DELETE)."""
        prices = {PUT: self.put_per_1000, LIST: self.list_per_1000, DELETE: self.delete_per_1000}
        return prices.get(kind, self.get_per_1000)

    def requests_usd(self, requests: Mapping[str, int]) -> Decimal:
        """What ``requests`` ({kind: count}) cost."""
        return sum((self.per_1000(kind) * count for kind, count in requests.items()), Decimal(0)) / 1000

    def storage_usd_per_month(self, size_bytes: int) -> Decimal:
        """What keeping ``size_bytes`` costs a month."""
        return self.storage_gb_month * size_bytes / GB


def usd(amount: Decimal) -> float:
    """A dollar amount as ``--json`` and metrics report it: a float, to a millionth of a cent."""
    return float(round(amount, 8))
