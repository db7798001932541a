"""``agent rewind`` and the session's ``/rewind``: what the person asks for, and is told.

:mod:`mdagent.rewind.checkpoints` keeps the workspace before and after each model
turn and :mod:`mdagent.rewind.rewind` plans and carries out a rewind; this module
is their edge: the listing (time, prompt, a ``git diff --stat``-like
summary), the plan shown by ``--diff``, the rewind of the files, of the
conversation (a new session holding the messages before the turn: the old
one is kept whole), and the audit log's record of it. Errors are one line
(:class:`~mdagent.core.errors.MdagentError`): 2 for a checkpoint that does not
exist or flags that do not go together, 1 for a rewind that stopped (a file
someone else changed, nothing to rewind, a write that failed).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mdagent.core.errors import UsageError
from mdagent.core.records import Record
from mdagent.rewind.checkpointstore import CheckpointError

if TYPE_CHECKING:
    from mdagent.agent.conversation import Conversation
    from mdagent.rewind.checkpoints import Checkpoint, Checkpoints, Turn
    from mdagent.rewind.rewind import RewindPlan, RewindResult
    from mdagent.runtime.runtime import Runtime

#: How many changed files a turn's summary names before "and N more".
STAT_FILES = 12
#: How many not-covered paths a rewind names before "and N more".
SHOWN_PATHS = 10


class NothingToRewind(CheckpointError):
    """No model turn changed files here (or every one is rewound already)."""

    code = "NOTHING_TO_REWIND"


class Request(Record):
    """What the person asked for: the checkpoint (None: the default) and how."""

    target: int | None = None
    files: bool = True
    conversation: bool = True
    force: bool = False


def open_checkpoints(runtime: Runtime) -> Checkpoints:
    """The checkpoints of ``runtime``'s workspace."""
    from mdagent.rewind.checkpoints import Checkpoints

    return Checkpoints(runtime.workdir, runtime.settings)


# -- what is shown ---------------------------------------------------------------


def stat_lines(changes: Any, indent: str = "    ") -> list[str]:
    """``git diff --stat``-like lines for a turn's changes, and the summary line."""
    changes = list(changes)
    if not changes:
        return [f"{indent}(no files changed)"]
    shown = changes[:STAT_FILES]
    width = max(len(c.path) for c in shown)
    lines = []
    for change in shown:
        lines.append(f"{indent}{change.path.ljust(width)} | {_stat_figure(change)}")
    if len(changes) > len(shown):
        lines.append(f"{indent}... and {len(changes) - len(shown)} more")
    added = sum(c.added or 0 for c in changes)
    deleted = sum(c.deleted or 0 for c in changes)
    files = "1 file" if len(changes) == 1 else f"{len(changes)} files"
    lines.append(
        f"{indent}{files} changed, {added} insertion{'s' if added != 1 else ''}(+), "
        f"{deleted} deletion{'s' if deleted != 1 else ''}(-)"
    )
    return lines


def _stat_figure(change: Any) -> str:
    if change.status == "mode":
        return "mode"
    if change.added is None and change.deleted is None:
        return f"binary ({change.status})"
    added, deleted = change.added or 0, change.deleted or 0
    bar = "+" * min(added, 20) + "-" * min(deleted, 20)
    word = {"created": "(new)", "deleted": "(deleted)"}.get(change.status, "")
    return " ".join(part for part in (str(added + deleted), bar, word) if part)


def turn_heading(turn: Turn) -> str:
    """One turn's first line: its checkpoint number, time, session and prompt."""
    from mdagent.core.text import first_line

    before = turn.before
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(before.time))
    if turn.kind == "rewind":
        what = f"rewind to {before.target}"
    else:
        what = f"turn {turn.turn}: {first_line(turn.prompt, 60) or '(no prompt)'}"
    notes = []
    if not turn.finished:
        notes.append("unfinished")
    if turn.rewound:
        notes.append("rewound")
    session = f"  session {before.session_id}" if before.session_id else ""
    note = f"  ({', '.join(notes)})" if notes else ""
    return f"{before.seq:>4}  {when}{session}  {what}{note}"


def listing(checkpoints: Checkpoints, session_id: str | None = None) -> str:
    """``agent rewind --list``: every turn (and rewind) with what it changed, oldest first."""
    turns = checkpoints.turns(session_id)
    if not turns:
        return "(no checkpoints in this workspace)"
    lines = []
    for turn in turns:
        lines.append(turn_heading(turn))
        lines += stat_lines(turn.changes, "        ")
    lines.append("agent rewind N takes the files back to checkpoint N (before that turn)")
    return "\n".join(lines)


def listing_json(checkpoints: Checkpoints) -> list[dict[str, Any]]:
    """``agent rewind --list --json``: each turn (and rewind) as a JSON object, oldest first."""
    return [
        {
            "checkpoint": turn.before.seq,
            "after": turn.after.seq if turn.after is not None else None,
            "kind": turn.kind,
            "time": turn.before.time,
            "session": turn.session_id or None,
            "turn": turn.turn if turn.kind == "turn" else None,
            "prompt": turn.prompt,
            "target": turn.before.target,
            "finished": turn.finished,
            "rewound": turn.rewound,
            "changes": [c._asdict() for c in turn.changes],
            "not_covered": [n._asdict() for n in turn.before.not_covered],
        }
        for turn in checkpoints.turns()
    ]


def plan_text(plan: RewindPlan) -> str:
    """What a rewind does (or would do): the files, what stops it, what it leaves."""
    lines = [f"rewind to checkpoint {plan.target.seq} ({_before_what(plan.target)}):"]
    for label, paths in (
        ("remove", plan.remove),
        ("bring back", plan.restore),
        ("restore", plan.revert),
        ("restore mode of", plan.chmod),
    ):
        lines += [f"  {label} {p}" for p in paths]
    if plan.empty:
        lines.append("  nothing to change: the files are as they were there")
    for conflict in plan.conflicts:
        lines.append(f"  stops: {conflict.path} {conflict.reason}")
    lines += _leaves(plan)
    return "\n".join(lines)


def _before_what(target: Checkpoint) -> str:
    from mdagent.core.text import first_line

    if target.kind == "rewind":
        where = "before" if target.phase == "before" else "after"
        return f"{where} the rewind to {target.target}"
    where = "before" if target.phase == "before" else "after"
    return f"{where} {first_line(target.prompt, 60)!r}"


def _leaves(plan: RewindPlan) -> list[str]:
    """The lines about what a rewind does not touch: your changes, .git refs, not covered."""
    lines = [f"  kept (changed, but not by a model): {p}" for p in plan.kept[:SHOWN_PATHS]]
    if len(plan.kept) > SHOWN_PATHS:
        lines.append(f"  kept: ... and {len(plan.kept) - SHOWN_PATHS} more")
    for move in plan.refs_moved:
        lines.append(
            f"  not rewound: the project's {move.name} moved during the turn at checkpoint "
            f"{move.turn.seq} ({_short(move.before)} -> {_short(move.after)}); "
            "git's history is yours to change"
        )
    shown = plan.not_covered[:SHOWN_PATHS]
    for item in shown:
        lines.append(f"  not covered (left as it is): {item.path} ({item.reason})")
    if len(plan.not_covered) > len(shown):
        lines.append(f"  not covered: ... and {len(plan.not_covered) - len(shown)} more")
    return lines


def _short(value: str | None) -> str:
    if value is None:
        return "none"
    return value if value.startswith("ref:") else value[:12]


# -- choosing the checkpoint ---------------------------------------------------------


def target_of(checkpoints: Checkpoints, number: int | None) -> Checkpoint:
    """Checkpoint ``number``, or before the latest model turn that changed files."""
    if number is not None:
        return checkpoints.get(number)
    target = checkpoints.default_target()
    if target is None:
        raise NothingToRewind(
            f"nothing to rewind: no model turn changed files in {checkpoints.workspace} "
            "(agent rewind --list shows the checkpoints)"
        )
    return target


def parse_request(text: str | None) -> Request:
    """``/rewind`` arguments: ``N``, ``--files-only``, ``--conversation-only``, ``--force``."""
    words = (text or "").split()
    request = Request()
    for word in words:
        if word == "--files-only":
            request = request._replace(conversation=False)
        elif word == "--conversation-only":
            request = request._replace(files=False)
        elif word == "--force":
            request = request._replace(force=True)
        elif word.isdigit() and request.target is None:
            request = request._replace(target=int(word))
        else:
            raise UsageError(
                f"/rewind: unexpected {word!r}; "
                "usage: /rewind [N] [--files-only|--conversation-only] [--force]"
            )
    return checked(request)


def checked(request: Request) -> Request:
    """``request``, or a :class:`UsageError` when it asks for nothing."""
    if not request.files and not request.conversation:
        raise UsageError("--files-only and --conversation-only do not go together")
    return request


# -- doing it -------------------------------------------------------------------------


def rewind_files(
    runtime: Runtime,
    checkpoints: Checkpoints,
    target: Checkpoint,
    *,
    force: bool,
    session_id: str = "",
) -> tuple[RewindResult, list[str]]:
    """Rewind the files to ``target``, recorded as a rewind and in the audit log; what to say.

    Raises :class:`~mdagent.rewind.rewind.RewindConflict` (recorded too) when a
    file someone else changed stops it: nothing is changed then.
    """
    from mdagent.rewind.rewind import apply, plan

    started = time.monotonic()
    planned = plan(checkpoints, target, force=force)
    try:
        result = apply(checkpoints, planned, session_id=session_id)
    except CheckpointError as exc:
        _audit(runtime, target, force, session_id, started, error=str(exc), code=exc.code)
        raise
    lines = _result_lines(result)
    problem = None
    if result.failed or result.mismatched:
        problem = f"{len(result.failed) + len(result.mismatched)} file(s) not rewound"
    _audit(runtime, target, force, session_id, started, error=problem, result=result)
    return result, lines


def _result_lines(result: RewindResult) -> list[str]:
    plan = result.plan
    if plan.empty:
        return [
            f"files: nothing to change, they are as at checkpoint {plan.target.seq}",
            *_leaves(plan),
        ]
    counts = [
        (len(plan.remove), "removed"),
        (len(plan.restore), "brought back"),
        (len(plan.revert), "restored"),
        (len(plan.chmod), "mode restored"),
    ]
    done = ", ".join(f"{n} {word}" for n, word in counts if n)
    lines = [
        f"files: rewound to checkpoint {plan.target.seq} ({_before_what(plan.target)}): {done}"
    ]
    if result.before is not None:
        lines.append(
            f"  (the files before this rewind are checkpoint {result.before.seq}: "
            f"agent rewind {result.before.seq} takes the rewind back)"
        )
    forced = [c.path for c in plan.conflicts if c.forceable]
    lines += [f"  overwritten (--force): {p}" for p in forced]
    lines += _leaves(plan)
    for path, why in result.failed:
        lines.append(f"  not rewound: {path}: {why}")
    for path in result.mismatched:
        lines.append(f"  not rewound: {path}: not as at the checkpoint when read back")
    return lines


def _audit(
    runtime: Runtime,
    target: Checkpoint,
    force: bool,
    session_id: str,
    started: float,
    *,
    error: str | None = None,
    code: str | None = None,
    result: RewindResult | None = None,
) -> None:
    args: dict[str, Any] = {"checkpoint": target.seq, "workspace": str(runtime.workdir)}
    if force:
        args["force"] = True
    if result is not None:
        plan = result.plan
        args["files"] = list(plan.paths)
        if result.before is not None:
            args["before_rewind"] = result.before.seq
    runtime.store.record_call(
        caller="person",
        tool="rewind",
        args=args,
        ok=error is None,
        error=error,
        code=code,
        duration_ms=int((time.monotonic() - started) * 1000),
        approved_by="person",
        session_id=session_id or None,
        workspace=str(runtime.workdir),  # `agent logs` shows this workspace's rows
    )


def rewind_conversation(runtime: Runtime, target: Checkpoint) -> tuple[Conversation | None, str]:
    """A new session holding the target turn's session up to before that turn; what to say.

    The old session stays whole (``/resume`` it, or ``agent sessions show``).
    None when the checkpoint has no conversation to go back to.
    """
    from mdagent.agent.conversation import Conversation

    if target.kind != "turn" or not target.session_id:
        return None, "conversation: not changed (this checkpoint belongs to no conversation)"
    store = runtime.store
    found = store.session(target.session_id)
    if found is None:
        return None, f"conversation: not changed (session {target.session_id} is gone)"
    messages = store.messages(found["id"])
    # Before turn N: the messages before the person's Nth; after it: before the next one.
    places = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not 0 < target.turn <= len(places):
        return None, f"conversation: not changed (session {found['id']} has no turn {target.turn})"
    following = target.turn if target.phase == "before" else target.turn + 1
    keep = messages[: places[following - 1]] if following <= len(places) else messages
    new = Conversation.start(
        store,
        cwd=str(runtime.workdir),
        model=found.get("model") or "",
        title=f"/rewind of {found['id']} to checkpoint {target.seq}",
    )
    for message in keep:
        new.add(message)
    return new, (
        f"conversation: session {new.session_id} holds session {found['id']} up to "
        f"checkpoint {target.seq} ({len(keep)} of {len(messages)} messages); "
        f"the full history stays in session {found['id']}"
    )


def run_rewind(
    runtime: Runtime, request: Request, *, confirm: Any = None
) -> tuple[list[str], bool]:
    """``agent rewind``: the files and the conversation back to a checkpoint.

    The lines to print, and whether every file was rewound. ``confirm(text)
    -> bool`` is asked before an argument-less rewind on a terminal (None:
    not asked).
    """
    checkpoints = open_checkpoints(runtime)
    target = target_of(checkpoints, request.target)
    question = f"rewind to checkpoint {target.seq} ({_before_what(target)})?"
    if confirm is not None and request.target is None and not confirm(question):
        return ["not rewound"], True
    lines: list[str] = []
    ok = True
    if request.files:
        result, said = rewind_files(runtime, checkpoints, target, force=request.force)
        lines += said
        ok = not (result.failed or result.mismatched)
    if request.conversation:
        new, said = rewind_conversation(runtime, target)
        lines.append(said)
        if new is not None:
            lines.append("  agent ask --continue goes on from there")
    return lines, ok


def prune_text(runtime: Runtime) -> str:
    """``agent rewind --prune``: remove old checkpoints (``checkpoints.keep_days``/``keep_mib``)."""
    from mdagent.rewind.checkpoints import prune

    report = prune(settings=runtime.settings)
    mib = 1024 * 1024
    return (
        f"pruned {report.removed} checkpoint(s), {report.stores_removed} workspace store(s); "
        f"checkpoints now take {report.size_after / mib:.1f} MiB "
        f"(were {report.size_before / mib:.1f} MiB)"
    )
