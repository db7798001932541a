"""The one error edge: whatever a command raises becomes one line and an exit status.

Both ways into mdagent end here: ``agent /name`` (the fast path of
:mod:`mdagent.cli.cli`) and every typer subcommand (:func:`mdagent.cli.app.run_app`).
The line is ``agent: …`` on stderr (red on a terminal) or, with ``--json``,
one ``{"ok": false, "error": {"code", "message"}}`` object on stdout. The
edge also names the program (:func:`program_name`) and shows the notices
of the modules below it (:func:`show_notices`).
"""

from __future__ import annotations

import contextlib
import os
import sys

from mdagent.core.errors import EXIT_BROKEN_PIPE, EXIT_FAILED, EXIT_INTERRUPTED, MdagentError

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from collections.abc import Callable


def guarded(
    action: Callable[[], int],
    *,
    as_json: bool | str | Callable[[], bool | str] = False,
    verbose: bool = False,
    translate: Callable[[Exception, bool | str], int | None] | None = None,
) -> int:
    """Run ``action``; its exit status, or the status of what it raised, said in one line.

    :class:`MdagentError`: its message and ``exit_code``; Ctrl-C (or a stop
    signal, which :mod:`mdagent.core.signals` turns into one): 130, 143 or 129
    after the line saying so; a reader that went away (``agent … | head -1``):
    141, quietly; ``SystemExit``: its code. ``translate(error, format)`` may
    give the status of another exception (a click usage error), having said
    it; anything left is a bug: one ``internal error`` line, or the traceback
    with ``verbose`` (``-v``). ``as_json`` is the failure's format: ``True``
    (one JSON object), ``"stream"`` (stream-json's final ``result`` event)
    or a function giving one, asked when it fails (``ask`` sets its own
    format as it runs).
    """
    from mdagent.ui.console import report_error

    def form() -> bool | str:
        return as_json() if callable(as_json) else as_json

    try:
        return action()
    except MdagentError as err:
        report_error(
            str(err), err.code, as_json=form(), session=err.session, exit_status=err.exit_code
        )
        return err.exit_code
    except KeyboardInterrupt:
        interrupted(form())
        return EXIT_INTERRUPTED
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_FAILED)
    except BrokenPipeError:
        # The reader went away: point stdout at /dev/null so flushing at exit
        # cannot raise again (Python's advice).
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as err:
        status = translate(err, form()) if translate is not None else None
        if status is not None:
            return status
        if verbose:
            raise
        message = f"internal error: {type(err).__name__}: {err} (rerun with -v)"
        report_error(message, "INTERNAL", as_json=form(), exit_status=EXIT_FAILED)
        return EXIT_FAILED


def interrupted(as_json: bool | str = False) -> None:
    """One line saying the run was interrupted (and by which signal, if one)."""
    from mdagent.core import signals
    from mdagent.ui.console import report_error

    with contextlib.suppress(OSError):  # SIGHUP: the terminal may be gone
        report_error(
            signals.message(), "INTERRUPTED", as_json=as_json, exit_status=EXIT_INTERRUPTED
        )


def program_name(argv0: str | None = None) -> str:
    """``mdagent`` when run by that name, else ``agent``: the name given to click.

    click names the completion variable and the script ``--show-completion``
    and ``--install-completion`` emit after it (``_MDAGENT_COMPLETE``,
    ``complete ... mdagent``), so each installed name completes itself.
    """
    name = os.path.basename(sys.argv[0] if argv0 is None else argv0)
    return "mdagent" if name == "mdagent" else "agent"


def show_notices() -> None:
    """Show the notices of the modules below the edge (:mod:`mdagent.core.notices`) on stderr."""
    from mdagent.core import notices

    notices.show_with(_show_notice)


def _show_notice(message: str, warning: bool) -> None:
    from mdagent.ui.console import show_notice  # on the first notice, not at start-up

    show_notice(message, warning)
