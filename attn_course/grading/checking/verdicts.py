"""``run_check``: call a check on an answer and sort what happens into a verdict.

Used by ``check()`` in the notebook (``api``) and by the grade command (``runner``); no
IPython here. The verdict is a ``Status``: passed, failed (with the check's hint), not
attempted (the answer is still ``...`` or the code raises ``NotImplementedError``
anywhere), error (the exception, pointing at the learner's own line; ``SystemExit``
included) or timeout (past the check's time limit, even through a bare ``except:``). The
answer's session guards the check (``local.LocalSession.checking`` for an answer in this
process: time limit, fixed seeds, capped output).
"""

from __future__ import annotations

from ..kernel.agent import TimeLimit
from ..kernel.local import LOCAL, LocalSession
from ..kernel.remote import LearnerError, RemoteTimeout, Session
from .errors import caused_by, describe_error
from .registry import CheckFailed, CheckSpec
from .result import CheckResult, Status

__all__ = ["run_check"]


def run_check(
    spec: CheckSpec,
    obj: object,
    session: Session | LocalSession = LOCAL,
    time_limit: float | None = None,
) -> CheckResult:
    """Call the check and turn what happens into a verdict.

    ``session``: where ``obj`` lives: this process (``LOCAL``, ``check()`` in the notebook),
    or a grading kernel's ``Session`` (``obj`` is then data or a ``Remote`` proxy); it guards
    the check (``checking``). ``time_limit`` (default: the registered one) is the limit the
    timeout message names.
    """
    time_limit = time_limit or spec.time_limit
    if obj is Ellipsis:
        return CheckResult(spec.id, Status.NOT_ATTEMPTED, "replace `...` with your answer")
    try:
        with session.checking(spec, obj, time_limit):
            message = spec.func(obj)
    except (TimeLimit, RemoteTimeout):
        return CheckResult(
            spec.id,
            Status.TIMEOUT,
            f"took longer than {time_limit:g} s: an infinite loop, or a very slow method?",
        )
    except LearnerError as exc:
        if exc.not_implemented:
            return CheckResult(
                spec.id, Status.NOT_ATTEMPTED, "your code still raises NotImplementedError"
            )
        return CheckResult(spec.id, Status.ERROR, exc.message)
    except (Exception, SystemExit) as exc:
        if caused_by(exc, NotImplementedError):
            return CheckResult(
                spec.id, Status.NOT_ATTEMPTED, "your code still raises NotImplementedError"
            )
        if isinstance(exc, CheckFailed):
            return CheckResult(spec.id, Status.FAILED, str(exc))
        return CheckResult(
            spec.id, Status.ERROR, describe_error(exc, getattr(spec.func, "__code__", None))
        )
    return CheckResult(spec.id, Status.PASSED, message or "")
