"""Long options that run code, however a program lets them be abbreviated.

GNU ``getopt_long`` and argp, git's parse-options and the
parsers of less and zip take any unambiguous prefix of a long option for the
option: ``git fetch --upl=CMD`` is ``--upload-pack=CMD``. A word that is a
prefix of a dangerous long option counts as that option (:func:`abbreviated`),
also where another option shares the prefix: the program refuses an
ambiguous prefix, so reading it as the dangerous one costs nothing and errs
on the safe side. :data:`LONG_OPTIONS` lists each such program with its
dangerous options and the harmless options that happen to be prefixes of
them (``tar --checkpoint``, an option of its own, is not
``--checkpoint-action``).

Read by :mod:`mdagent.safety.shell.programs` (git, tar, sed, less…) and
:mod:`mdagent.safety.shell.interpreters` (make's and julia's code options), and by
:mod:`mdagent.safety.shell.understanding` for the options that write a file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class LongOptions:
    """How a program reads abbreviated long options, and which ones matter.

    ``dangerous``: options that name a program or code to run, or a file
    holding either. ``exact``: other options of the program that are
    prefixes of a dangerous one; written in full they are themselves.
    ``parser``: what reads them (each takes an unambiguous prefix, but
    ripgrep, which is read as if it did).
    """

    parser: str
    dangerous: frozenset[str]
    exact: frozenset[str] = frozenset()


def _long(parser: str, dangerous: str, exact: str = "") -> LongOptions:
    return LongOptions(parser, frozenset(dangerous.split()), frozenset(exact.split()))


# The programs whose long options may be abbreviated and that run what an
# option names. The wrappers (env, timeout, sudo…) read their abbreviations
# in mdagent.safety.shell.wrappers (`_options`); make's and julia's code options are read
# in mdagent.safety.shell.interpreters with these entries.
LONG_OPTIONS: dict[str, LongOptions] = {
    "git": _long(
        "parse-options",
        "upload-pack receive-pack exec extcmd open-files-in-pager template config config-env "
        "sendmail-cmd to-cmd cc-cmd header-cmd smtp-server httpd browser access-hook",
        # format-patch/send-email --to and --cc, checkout-index --temp: options of
        # those subcommands only (programs._GIT_EXACT); elsewhere `--temp=` is `--template=`.
        "to cc temp",
    ),
    "tar": _long(
        "argp",
        "to-command checkpoint-action use-compress-program info-script new-volume-script "
        "rsh-command rmt-command",
        "checkpoint",
    ),
    "sed": _long("getopt_long", "expression file"),
    "man": _long("argp", "pager html config-file"),
    "zip": _long("zip's get_option", "unzip-command"),
    "less": _long("less's own", "lesskey-file lesskey-src lesskey-content"),
    # ripgrep takes no abbreviation that we know of; read as if it did (fail closed).
    "rg": _long("ripgrep's own", "pre hostname-bin"),
    "make": _long("getopt_long", "eval file makefile"),
    "julia": _long("getopt_long", "eval print"),
    # Programs that run a program or code an option names (programs._BY_OPTION).
    "split": _long("getopt_long", "filter"),
    "sort": _long("getopt_long", "compress-program"),
    "wget": _long("wget's own", "use-askpass execute config"),
    "rsync": _long("popt", "rsh rsync-path config"),
    "pandoc": _long("pandoc's own", "filter lua-filter"),
}
# Names the same programs go by.
ALIASES = {"gtar": "tar", "bsdtar": "tar", "gsed": "sed", "gmake": "make"}


def abbreviated(word: str, options: Iterable[str], exact: Iterable[str] = ()) -> str | None:
    """The long option of ``options`` that ``word`` (``--upl=x``) abbreviates, or None.

    Any prefix counts, also one shared with another option (fail closed: the
    program refuses an ambiguous prefix); a word naming exactly one of
    ``exact`` (another option of the program) does not.
    """
    if not word.startswith("--"):
        return None
    name = word[2:].split("=", 1)[0]
    if not name or name in exact:
        return None
    return next((option for option in sorted(options) if option.startswith(name)), None)


def dangerous_option(program: str, word: str, exact: Iterable[str] | None = None) -> str | None:
    """The dangerous long option of ``program`` (:data:`LONG_OPTIONS`) ``word`` stands for.

    ``exact``: the program's other options that are prefixes of a dangerous
    one where this command reads them (default: all the entry lists).
    """
    spec = LONG_OPTIONS.get(ALIASES.get(program, program))
    if not spec:
        return None
    return abbreviated(word, spec.dangerous, spec.exact if exact is None else exact)
