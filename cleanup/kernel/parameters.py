"""The per-run overrides an operation declares, and the one place they are checked and typed.

Every front door (``table.maintenance.<operation>(...)``, ``table.maintenance.run(name, ...)``, the CLI's flags,
``tableformat.spark``, ``tablefmt maintain``) hands its overrides to :func:`~.operation.run_operation`, which passes
them through :func:`coerce_overrides` before the operation sees them: an unknown name, a wrong type or a value out
of range is refused there, in one style, before anything is read. An operation's ``configure`` then receives only
the overrides given (None means "not given"), each already of its final type.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tableformat.durations import duration_arg_ms
from tableformat.errors import ValidationError
from tableformat.option_types import INT32_MAX, Option

Kind = Literal["int", "duration", "size", "flag", "choice", "text"]


@dataclass(frozen=True, slots=True)
class Parameter:
    """A per-run override an operation accepts (a keyword of its API call, a ``--flag`` of its CLI command)."""

    name: str
    """The override key, e.g. ``retain_min`` (the CLI flag is ``--retain-min``)."""
    kind: Kind
    """``int``: a whole number; ``duration``: ``30d``, ``1h30m``, Paimon's ``1 h``, a timedelta or milliseconds
    (typed as milliseconds); ``size``: bytes or ``128mb`` (typed as bytes); ``flag``: a boolean switch; ``choice``:
    one of ``choices``; ``text``: any string."""
    help: str
    option: Option[Any] | None = None
    """The table option this overrides: the value is typed and range-checked exactly as that option's."""
    minimum: int | None = None
    """For an ``int`` without an option: the smallest value allowed."""
    choices: tuple[str, ...] = ()
    secret: bool = False
    """Personal data (an erasure's filter names the people whose rows go): the audit ledger records a SHA-256 of
    it, never the value (:func:`auditable_overrides`)."""

    @property
    def flag(self) -> str:
        """The CLI flag, e.g. ``--retain-min``."""
        return "--" + self.name.replace("_", "-")


def coerce_overrides(operation: str, parameters: tuple[Parameter, ...], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The overrides given (None values dropped), each checked and typed per its declared parameter; one
    ValidationError naming the operation for an override it does not take, a wrong type or a value out of range."""
    declared = {parameter.name: parameter for parameter in parameters}
    unknown = sorted(set(overrides) - set(declared))
    if unknown:
        takes = ", ".join(declared) or "no overrides"
        raise ValidationError(f"{operation} takes no {', '.join(unknown)}; it takes {takes}")
    return {name: _coerce(operation, declared[name], value) for name, value in overrides.items() if value is not None}


def _coerce(operation: str, parameter: Parameter, value: Any) -> Any:
    name = parameter.name
    if parameter.option is not None:
        return parameter.option.argument(value, name)
    if parameter.kind == "flag":
        if not isinstance(value, bool):
            raise ValidationError(f"{operation}: {name} must be True or False, got {value!r}")
        return value
    if parameter.kind == "duration":
        return duration_arg_ms(value, name)
    if parameter.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError(f"{operation}: {name} must be an integer, got {value!r}")
        low = INT32_MAX * -1 - 1 if parameter.minimum is None else parameter.minimum
        if not low <= value <= INT32_MAX:
            raise ValidationError(f"{operation}: {name} must be >= {low} and <= {INT32_MAX}, got {value}")
        return value
    if parameter.kind == "choice" and value not in parameter.choices:
        raise ValidationError(f"{operation}: {name} must be one of {', '.join(parameter.choices)}, got {value!r}")
    if parameter.kind == "size":
        raise ValidationError(f"{operation}: {name} is a size without an option to type it")  # a declaration bug
    return value


def auditable_overrides(parameters: tuple[Parameter, ...], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The overrides as a run's audit record may keep them: a ``secret`` parameter's value replaced by
    ``sha256:<hex>`` of its text (enough to tell two runs with the same filter apart, nothing to read back)."""
    secret = {parameter.name for parameter in parameters if parameter.secret}
    return {
        name: f"sha256:{hashlib.sha256(str(value).encode()).hexdigest()}" if name in secret else value
        for name, value in overrides.items()
        if value is not None
    }
