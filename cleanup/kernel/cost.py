"""What a run costs in requests and saves in storage (docs/cost.md).

Every run is metered (:class:`~tableformat.io.metered.MeteredFileIO`, a few integer increments per call): a real
run reports the requests it sent; a dry run reports those it sent planning plus an estimate of what carrying out
its plan adds (the deletes, a DeleteObjects per 1,000 files; the claim; the audit record; an operation's own
writes, such as expiration's journal). Both are priced by the table's price table (``maintenance.cost.*``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from typing import TypeVar

from tableformat.context import TableContext
from tableformat.io.metered import DELETE, LIST, PUT, RequestTally
from tableformat.options import AUDIT_ENABLED
from tableformat.pricing import PriceTable, usd

from .result import OperationResult

R = TypeVar("R", bound=OperationResult)

CLAIM_REQUESTS = {PUT: 1, LIST: 1, DELETE: 1}
"""A maintenance claim: written (a conditional PUT), the other claims listed, removed (tableformat/claims.py)."""


def bookkeeping_requests(ctx: TableContext, changes: bool, prunes_audit: bool) -> Counter[str]:
    """What a run that changes the table sends besides its own work: its claim, its audit record (a PUT) and, for an
    operation that prunes the ledger, a listing of it. Nothing for a run that changes nothing (it takes no claim)."""
    needed: Counter[str] = Counter()
    if not changes:
        return needed
    needed.update(CLAIM_REQUESTS)
    if ctx.options.require(AUDIT_ENABLED):
        needed.update({PUT: 1, LIST: 1 if prunes_audit else 0})
    return needed


def priced(result: R, ctx: TableContext, tally: RequestTally, added: Mapping[str, int] | None = None) -> R:
    """``result`` with its requests (those ``tally`` counted, plus ``added``: a dry run's estimate of the rest),
    their price and the monthly price of the storage it frees, by the table's price table."""
    counted = tally.counts()
    total = Counter(counted)
    total.update(added or {})
    requests = {kind: count for kind, count in total.items() if count}
    prices = PriceTable.of(ctx.options)
    return dataclasses.replace(
        result,
        requests=tuple(sorted(requests.items())),
        counted_requests=tuple(sorted(counted.items())),
        requests_usd=usd(prices.requests_usd(requests)),
        freed_usd_per_month=usd(prices.storage_usd_per_month(result.deleted_bytes)),
    )
