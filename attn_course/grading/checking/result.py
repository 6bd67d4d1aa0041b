"""The grading verdicts: ``Status``, one ``CheckResult`` per check, one ``NotebookReport`` per file.

``NotebookReport.to_json()`` is the only report format: the ``--json`` file of the grade
command, the per-student files of a roster and the resume cache all hold it.
``CheckResult.from_json`` raises ``ValueError`` on a line it cannot read: a verdict that
cannot be parsed is an error, never a line that is silently skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["SCHEMA_VERSION", "STATUSES", "Status", "CheckResult", "NotebookReport"]

SCHEMA_VERSION = 2  # bump when the JSON of CheckResult / NotebookReport changes


class Status(StrEnum):
    """What happened to one check (a ``str``: ``Status.PASSED == "passed"``)."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_ATTEMPTED = "not_attempted"
    ERROR = "error"
    TIMEOUT = "timeout"


STATUSES = tuple(status.value for status in Status)

_SYMBOLS = {
    Status.PASSED: "✔",
    Status.FAILED: "✘",
    Status.NOT_ATTEMPTED: "…",
    Status.ERROR: "⚠",
    Status.TIMEOUT: "⏱",
}
_LABELS = {Status.NOT_ATTEMPTED: "not attempted", Status.TIMEOUT: "timed out"}


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one exercise.

    ``uses_reference`` flags an answer that runs the course's own reference code (the
    solutions are public): it is reported, not failed.
    """

    id: str
    status: Status
    message: str
    uses_reference: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))

    @property
    def verdict(self) -> str:
        """One readable line, e.g. ``✘ causal_mask: failed — the diagonal must stay visible``."""
        label = _LABELS.get(self.status, self.status.value)
        line = f"{_SYMBOLS[self.status]} {self.id}: {label}"
        line = f"{line} — {self.message}" if self.message else line
        return f"{line} [uses the course's reference code]" if self.uses_reference else line

    def __str__(self) -> str:
        return self.verdict

    def _ipython_display_(self) -> None:
        """Show nothing as a cell result: ``check()`` has already printed the verdict."""

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "status": self.status.value,
            "message": self.message,
            "uses_reference": self.uses_reference,
        }

    @classmethod
    def from_json(cls, data: Any) -> CheckResult:
        """Read ``to_json()``'s dict back (any JSON value); ValueError when it is not one."""
        try:
            return cls(
                str(data["id"]),
                Status(data["status"]),
                str(data["message"]),
                bool(data.get("uses_reference", False)),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"unreadable verdict {data!r:.200}: {exc}") from None


@dataclass
class NotebookReport:
    """The grading of one notebook file; ``error`` is set when it could not be graded."""

    path: str
    notebook: str | None = None  # the course notebook it was graded as
    checks: list[CheckResult] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # phase -> seconds

    @property
    def score(self) -> int:
        return sum(result.status == Status.PASSED for result in self.checks)

    @property
    def max_score(self) -> int:
        return len(self.checks)

    def to_json(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "path": self.path,
            "notebook": self.notebook,
            "score": self.score,
            "max_score": self.max_score,
            "error": self.error,
            "seconds": round(self.seconds, 2),
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "checks": [result.to_json() for result in self.checks],
        }

    @classmethod
    def from_json(cls, data: dict) -> NotebookReport:
        """Read ``to_json()`` back; ValueError for another schema version or a bad verdict."""
        if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"not a report of schema version {SCHEMA_VERSION}")
        return cls(
            path=data["path"],
            notebook=data.get("notebook"),
            checks=[CheckResult.from_json(c) for c in data["checks"]],
            error=data.get("error"),
            seconds=float(data.get("seconds", 0.0)),
            timings=dict(data.get("timings", {})),
        )
