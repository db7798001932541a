"""One shell lexicon: the command parser and the template scanner read the same words.

Before, each model had its own list of shells and of builtins that run
code, and the lists disagreed (the scanner knew fish, csh and tcsh, the
parser posh; the scanner let a placeholder into ``hash`` and ``coproc``).
Each test here runs both models over every word of a list.
"""

from __future__ import annotations

import contextlib

import pytest

from mdagent.declarations.placeholders import TemplateError, check_argv, check_shell
from mdagent.safety.policy import Policy
from mdagent.safety.shell.lexicon import CODE_BUILTINS, SHELLS
from mdagent.safety.shell.shellparse import Unparseable, parse


class _Exec:
    name = "exec"
    aliases = ()
    meta = {"security": "moderate"}


def _decision(policy: Policy, command: str) -> str:
    return policy.evaluate(_Exec(), {"command": command}).decision


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_every_shell_runs_its_c_script_as_code_in_both_models(shell, tmp_path):
    # The template scanner: a placeholder as the script of `SHELL -c` is refused...
    with pytest.raises(TemplateError, match="run as code"):
        check_shell(f"{shell} -c {{script}}")
    with pytest.raises(TemplateError, match="run as code"):
        check_argv([shell, "-c", "{script}"])
    # ...and the parser: no allow pattern covers it, a deny rule sees into it.
    (segment, *inner) = parse(f"{shell} -c 'rm -rf x'")
    assert segment.dynamic
    assert [s.text for s in inner] == ["rm -rf x"]
    allow = Policy({"policy": {"allow": [f"exec({shell} *)"]}}, workdir=tmp_path)
    assert _decision(allow, f"{shell} -c 'rm -rf x'") == "ask"
    deny = Policy({"policy": {"deny": ["exec(rm *)"]}}, workdir=tmp_path)
    assert _decision(deny, f"{shell} -c 'rm -rf x'") == "deny"


@pytest.mark.parametrize("builtin", sorted(CODE_BUILTINS))
def test_every_code_builtin_is_refused_a_placeholder_and_never_covered(builtin, tmp_path):
    with pytest.raises(TemplateError, match=f"in the arguments of `{builtin}`"):
        check_shell(f"{builtin} x {{value}}")
    with contextlib.suppress(Unparseable):  # coproc: a keyword the grammar does not know
        assert parse(f"{builtin} x y")[0].dynamic
    allow = Policy({"policy": {"allow": [f"exec({builtin} *)"]}}, workdir=tmp_path)
    assert _decision(allow, f"{builtin} x y") == "ask"
