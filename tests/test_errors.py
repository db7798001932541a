"""The exit-status table in mdagent.core.errors: the numbers the CLI exits with, and what the docs list."""

from __future__ import annotations

import signal

from mdagent.core import errors


def test_every_status_is_listed_once_with_a_meaning():
    statuses = [status for status, _ in errors.EXIT_STATUSES]
    assert len(statuses) == len(set(statuses))
    assert all(meaning.strip() for _, meaning in errors.EXIT_STATUSES)
    named = {value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    named.discard(errors.EXIT_STATUSES)
    assert set(statuses) == named


def test_signal_statuses_are_what_a_shell_reports():
    assert errors.EXIT_HANGUP == 128 + signal.SIGHUP
    assert errors.EXIT_INTERRUPTED == 128 + signal.SIGINT
    assert errors.EXIT_BROKEN_PIPE == 128 + signal.SIGPIPE
    assert errors.EXIT_TERMINATED == 128 + signal.SIGTERM


def test_every_error_class_exits_with_a_listed_status():
    listed = {status for status, _ in errors.EXIT_STATUSES}
    classes = [errors.MdagentError]
    seen = []
    while classes:
        cls = classes.pop()
        seen.append(cls)
        classes.extend(cls.__subclasses__())
    for cls in seen:
        assert cls.exit_code in listed, cls
    assert errors.UsageError.exit_code == errors.ConfigError.exit_code == 2
    assert errors.PolicyDenied.exit_code == 126 and errors.Interrupted.exit_code == 130
