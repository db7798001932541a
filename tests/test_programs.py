"""What programs run besides themselves (mdagent.safety.shell.programs, issue 30): abbreviated
long options, sed scripts, tar/zip/rg/man/less/vim options, shells' start-up,
variables, and git pointed at another repository."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from mdagent.safety.shell.longoptions import LONG_OPTIONS, abbreviated, dangerous_option
from mdagent.safety.shell.programs import (
    Runs,
    assigned,
    device_path,
    foreign_repository,
    git_places,
    runs,
    sed_script,
)


def words(command: str) -> tuple[str, ...]:
    return tuple(shlex.split(command))


# -- long options ----------------------------------------------------------------------


def _prefixes() -> list[tuple[str, str, str]]:
    """Every prefix of every dangerous long option of every program in the table."""
    out = []
    for program, spec in LONG_OPTIONS.items():
        for option in sorted(spec.dangerous):
            for end in range(1, len(option) + 1):
                if option[:end] not in spec.exact:
                    out.append((program, option, option[:end]))
    return out


@pytest.mark.parametrize(("program", "option", "prefix"), _prefixes())
def test_every_prefix_of_every_dangerous_long_option_is_caught(program, option, prefix):
    found = dangerous_option(program, f"--{prefix}=x")
    assert found is not None and found.startswith(prefix)
    assert dangerous_option(program, f"--{prefix}") is not None  # the value in the next word


@pytest.mark.parametrize(
    ("program", "word"),
    [
        ("git", "--to=a@b"),  # format-patch/send-email --to: an address
        ("git", "--cc"),
        ("git", "--temp"),  # checkout-index --temp
        ("tar", "--checkpoint=10"),  # not --checkpoint-action
        ("tar", "--to-stdout"),
        ("rg", "--pre-glob=*.gz"),
        ("git", "--upload-packs"),  # longer than any option: no prefix of one
        ("git", "--"),
        ("git", "-u"),
        ("nosuch", "--upload-pack"),
    ],
)
def test_an_exact_harmless_option_or_another_word_is_not_dangerous(program, word):
    assert dangerous_option(program, word) is None


@pytest.mark.parametrize(
    "command",
    [
        "git init -q --temp=tpl x",
        "git clone --temp=tpl u d",
        "git init --tem tpl",
        "git init --te=x",
    ],
)
def test_a_prefix_that_is_another_subcommands_option_is_the_dangerous_one_elsewhere(command):
    # `--temp` is checkout-index's own option; to git init and clone it is --template.
    found = runs(words(command))
    assert found is not None and found.hidden and "(--template)" in found.why


def test_abbreviated_reads_the_name_before_the_value():
    assert abbreviated("--out=x", ["output"]) == "output"
    assert abbreviated("--output=--upload-pack", ["upload-pack"]) is None
    assert abbreviated("-out", ["output"]) is None
    assert abbreviated("--=x", ["output"]) is None
    assert abbreviated("--log", ["log-file"], ["log"]) is None
    assert abbreviated("--lo", ["log-file"], ["log"]) == "log-file"
    # Fail closed: a prefix two options share stands for one of them.
    assert abbreviated("--o", ["open", "output"]) in ("open", "output")


def test_aliases_read_with_the_programs_table():
    assert dangerous_option("gtar", "--to-c=x") == "to-command"
    assert dangerous_option("bsdtar", "--use-c=x") == "use-compress-program"
    assert dangerous_option("gmake", "--ev=x") == "eval"


# -- what runs -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "why", "hidden"),
    [
        # git: options that name a program, any abbreviation
        ("git fetch --upload-pack=x o", "`git fetch --upload-pack=x` runs", True),
        ("git ls-remote --upl=x .", "`git ls-remote --upl=x` (--upload-pack) runs", True),
        ("git push --rec x", "(--receive-pack)", True),
        ("git rebase --ex make", "(--exec)", True),
        ("git clone --templ=t u", "(--template)", True),
        ("git clone -c core.hooksPath=x u", "`git clone -c` runs", True),
        ("git clone -u x u", "`git clone -u` runs", True),
        ("git send-email --to-cmd=x", "`git send-email --to-cmd=x` runs", True),
        ("git grep -O foo", "`git grep -O` runs", True),
        ("git difftool -x x", "`git difftool -x` runs", True),
        ("git submodule foreach ls", "`git submodule` runs commands given as text", True),
        ("git bisect run ./t", "`git bisect` runs commands given as text", True),
        ("git filter-branch", "`git filter-branch` runs commands given as text", True),
        ("git -c alias.x=!rm x", "`git -c` sets what git runs", True),
        ("git -c core.pager=less log", "`git -c` sets what git runs", True),
        ("git -c", "`git -c` sets what git runs", True),
        ("git -ccore.pager=x log", "`git -ccore.pager=x` sets what git runs", True),
        ("git --config-env=core.pager=X log", "`git --config-env=core.pager=X` sets", True),
        ("git --exec-path=. status", "`git --exec-path=.` sets what git runs", True),
        # settings that name no program: only not coverable by a pattern
        ("git -c user.name=me commit", "`git -c` sets what git runs", False),
        ("git -c Color.UI=never -c core.quotePath=off log", "`git -c` sets", False),
        ("git -c user.name=me -c alias.x=!y x", "`git -c` sets", True),
        # sed
        ("sed s/a/b/e f", "`sed` script runs a command (`s///e: the pattern space`)", True),
        ("sed -n 1e\\ ls f", "`sed` script runs a command (`ls`)", True),
        ("sed -e p -e 2e f", "`sed` script runs a command (`e: the pattern space`)", True),
        ("sed --expr=1e f", "`sed` script runs a command", True),
        ("sed -ne 1e f", "`sed` script runs a command", True),
        ("sed -n -es/x/y/e f", "`sed` script runs a command", True),
        ("sed w\\ out f", "`sed` script writes `out`", False),
        ("sed s/a/b/w\\ out f", "`sed` script writes `out`", False),
        ("sed -f s.sed f", "`sed -f s.sed` runs a script no rule reads", True),
        ("sed --file=s.sed f", "`sed -f s.sed` runs a script no rule reads", True),
        ("sed -f - f", "`sed -f -` runs a script read from a file descriptor", True),
        ("sed -f /dev/fd/3 f", "`sed -f /dev/fd/3` runs a script read", True),
        ("sed -f /dev/stdin f", "`sed -f /dev/stdin` runs a script read", True),
        ("sed -fs.sed f", "`sed -f s.sed` runs a script no rule reads", True),
        ("sed --s p f", "`sed --s` not understood", True),
        ("sed -X p f", "`sed -X` not understood", True),
        ("sed --nosuch p f", "`sed --nosuch` not understood", True),
        # tar
        ("tar --to-command=x -xf a", "`tar --to-command=x` runs", True),
        ("tar --checkpoint-a=exec=x -cf a .", "`tar --checkpoint-a=exec=x` runs", True),
        ("tar -I zstd -cf a .", "`tar -I` (-I) runs", True),
        ("tar -cvIzstd -f a .", "`tar -cvIzstd` (-I) runs", True),
        ("tar -F s -cf a .", "`tar -F` (-F) runs", True),
        ("tar cIf zstd a .", "`tar cIf` (-I) runs", True),
        ("tar --rsh-command=x -cf h:a .", "`tar --rsh-command=x` runs", True),
        # zip, rg, man
        ("zip -TT x a.zip f", "`zip -TT` runs a program named on the line", True),
        ("zip -TTx a.zip f", "`zip -TTx` runs", True),
        ("zip --unzip=x -T a.zip f", "`zip --unzip=x` runs", True),
        ("rg --pre x y", "`rg --pre` runs a program named on the line", True),
        ("rg --pre=x y", "`rg --pre=x` runs", True),
        ("rg --hostname-bin=x y", "`rg --hostname-bin=x` runs", True),
        ("man -P cat ls", "`man -P` runs a program named on the line", True),
        ("man -aP cat ls", "`man -P` runs", True),
        ("man -Hfirefox ls", "`man -H` runs", True),
        ("man -C conf ls", "`man -C` runs", True),
        ("man --pag=cat ls", "`man --pag=cat` runs", True),
        # less
        ("less +!ls f", "`less +!ls` runs less commands, which may run a shell command", True),
        ("less ++|x f", "`less ++|x` runs less commands", True),
        ("less +v f", "`less +v` runs less commands", True),
        ("less -k keys f", "`less -k` reads key bindings that may run a program", True),
        ("less -Sk keys f", "`less -Sk` reads key bindings", True),
        ("less --lesskey-src=k f", "`less --lesskey-src=k` reads key bindings", True),
        ("less -o log f", "`less -o` writes a log file", False),
        ("less -SO log f", "`less -SO` writes a log file", False),
        ("less --log-f=x f", "`less --log-f=x` writes a log file", False),
        # vim
        ("vim -c q f", "`vim -c` (-c) runs Ex commands or a script", True),
        ("vim -es f", "`vim -es` (-e) runs Ex commands or a script", True),
        ("vim -S s.vim", "`vim -S` (-S) runs", True),
        ("nvim -l x.lua", "`nvim -l` (-l) runs", True),
        ("vim +!ls f", "`vim +!ls` runs an Ex command, which may run commands", True),
        ("vim +/x f", "`vim +/x` runs an Ex command", True),
        ("view --cmd q f", "`view --cmd` runs an Ex command", True),
        ("vi --CMD q f", "`vi --CMD` runs an Ex command", True),
        ("gvim --remote-send x", "`gvim --remote-send` runs an Ex command", True),
        ("vim -w keys f", "`vim -w` writes a file", False),
        ("vim --startuptime t f", "`vim --startuptime` writes a file", False),
        ("vim --log vim.log f", "`vim --log` writes a file", False),
        ("ex f", "`ex` reads Ex commands from its input, which may run commands", True),
        # shells
        ("bash -i", "`bash` is interactive: it runs start-up files and PROMPT_COMMAND", True),
        ("sh -ei", "`sh` is interactive", True),
        ("zsh --interactive", "`zsh` is interactive", True),
        ("bash --rcfile rc", "`bash --rcfile` runs a start-up file", True),
        ("bash --init-file=rc", "`bash --init-file=rc` runs a start-up file", True),
        ("bash /dev/fd/3", "`bash /dev/fd/3` runs code read from a file descriptor", True),
        ("bash -e /proc/self/fd/5", "`bash /proc/self/fd/5` runs code read", True),
        ("bash -o pipefail -- /dev/fd/3", "`bash /dev/fd/3` runs code read", True),
        ("bash -eo pipefail /dev/fd/3", "`bash /dev/fd/3` runs code read", True),
        ("bash -O extglob /dev/fd/3", "`bash /dev/fd/3` runs code read", True),
        ("bash --init-file rc", "`bash --init-file` runs a start-up file", True),
        ("bash --rcfile=rc", "`bash --rcfile=rc` runs a start-up file", True),
        ("zsh -X /dev/fd/3", "`zsh /dev/fd/3` runs code read", True),  # -X takes no value
        ("sed -i s/a/b/e f", "`sed` script runs a command", True),
        ("/usr/bin/sed -n '1e ls' f", "`sed` script runs a command (`ls`)", True),
        ("sed - p", "`sed` script not understood", True),  # `-` is the script
        # programs that run what an option names (red team 8)
        ("git daemon --access-hook=x .", "`git daemon --access-hook=x` runs", True),
        ("git daemon --acc=x .", "`git daemon --acc=x` (--access-hook) runs", True),
        ("git remote-ext x 'rm y'", "`git remote-ext` runs commands given as text", True),
        ("split --fil='rm x' f", "`split --fil=rm x` runs a program named on the line", True),
        ("split --filter x f", "`split --filter` runs", True),
        ("sort --compress-program=x f", "`sort --compress-program=x` runs", True),
        ("sort --compress-p=x f", "`sort --compress-p=x` runs", True),
        ("wget --use-a=x u", "`wget --use-a=x` runs", True),
        ("wget -e use_askpass=x u", "`wget -e` runs", True),
        ("rsync -e x a b", "`rsync -e` runs", True),
        ("rsync -avze x a b", "`rsync -avze` runs", True),
        ("rsync --rs=x a b", "`rsync --rs=x` runs", True),
        ("rsync --rsync-path=x a b", "`rsync --rsync-path=x` runs", True),
        ("pandoc --filter x f", "`pandoc --filter` runs", True),
        ("pandoc --lua-f=x f", "`pandoc --lua-f=x` runs", True),
        ("pandoc -F x f", "`pandoc -F` runs", True),
        ("gcc -wrapper rm,x f.c", "`gcc -wrapper` runs", True),
        ("cc -fplugin=x.so f.c", "`cc -fplugin=x.so` runs", True),
        ("clang -B dir f.c", "`clang -B` runs", True),
        ("gcc -specs=x f.c", "`gcc -specs=x` runs", True),
        ("gdb -batch -ex 'shell x'", "`gdb` runs the commands of its options", True),
        ("gdb -x f", "`gdb` runs the commands", True),
        ("sqlite3 :memory: '.shell x'", "`sqlite3` runs the dot commands", True),
        ("ed -s f", "`ed` runs the commands of its input", True),
        ("scp -o ProxyCommand=x a b:", "`scp -o ProxyCommand=x` runs a command", True),
        ("scp -oProxyCommand=x a b:", "`scp -o ProxyCommand=x` runs a command", True),
        ("ssh -o 'LocalCommand x' h", "`ssh -o LocalCommand x` runs a command", True),
        ("ssh -o KnownHostsCommand=x h", "`ssh -o KnownHostsCommand=x` runs", True),
        ("ssh -F cfg h", "`ssh -F` runs", True),
        ("scp -S prog a b:", "`scp -S` runs", True),
        ("sftp -S prog host", "`sftp -S` runs", True),
        # make: inline code (policy.inline_eval decides), hidden from deny rules
        ("make -f - all", "`make -f -` makes recipes of text no rule reads", True),
        ("make --ev=x", "`make --eval` makes recipes", True),
        ("gmake --f=/dev/stdin", "`gmake --f /dev/stdin` makes recipes", True),
    ],
)
def test_what_a_program_runs_besides_itself(command, why, hidden):
    found = runs(words(command))
    assert found is not None, command
    assert why in found.why and found.hidden is hidden


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git log --oneline",
        "git grep -e foo",
        "git merge --log main",
        "git format-patch --to=a@b --cc=c@d HEAD~1",
        "git checkout-index --temp -a",
        "git -C x -p grep foo",
        "git --git-dir -c log",  # the value of a folder option, not -c
        "git --work-tree -c log",
        "git --namespace -c log",
        "git -C -c log",
        "git grep --Ovim foo",
        "git merge -Xours main",
        "sed -n 1p f",
        "sed 's/e/E/g;s/w/W/2' f",
        "sed -E -n '/x/{p;q}' f",
        "sed -s -u -z -n -l 5 p f",
        "sed 1r\\ other f",
        "sed 'y/abc/xyz/' f",
        "sed ':a;N;$!ba;s/\\n/ /g' f",
        "sed '$a\\\nend' f",
        "sed '1i text with e and w' f",
        "sed 's/a/b/w /dev/stdout' f",
        "sed -i.bak s/a/b/ f",
        "sed --in-place=.bak --quiet --regexp-extended s/a/b/ f",
        "sed --line-length 5 l f",
        "sed -- s/a/b/ f",
        "sed",
        "sed -e",
        "tar -cf a.tar .",
        "tar --checkpoint=10 -xf a.tar",
        "tar xvf a.tar",
        "tar -xf Foo.tar -- -I",
        "tar -cf a.tar --files-from=Files.txt",
        "tar -cf a.tar aFile",
        "tar -cf a.tar -X excl .",
        "zip -r a.zip .",
        "zip -T a.zip",
        "rg --pre-glob '*.gz' x",
        "rg -e x",
        "man ls",
        "man -a -L C ls",
        "man -S 1:8 ls",
        "man -Tutf8 ls",
        "man --Cx ls",  # a long option is no cluster of letters (man refuses it)
        "man PHP",
        "less f",
        "less +G f",
        "less +123 f",
        "less +50g f",
        "less +F f",
        "less +/pattern f",
        "less -p x f",
        "less -R -S f",
        "less -Pkprompt f",  # k and o in the value of -P and -T
        "less -Tok f",
        "less -- +!x",
        "vim f",
        "vim +12 f",
        "vim + f",
        "vim -R -n f",
        "vim -- -c",
        "vim --noplugin --clean f",
        "bash",
        "bash -c 'ls -i'",
        "bash -lc ls",
        "bash script.sh",
        "bash /dev/null",
        "bash /dev/stdin",  # standard input: judged by where the line feeds it from
        "bash --",
        "bash -c /dev/fd/3 x",  # the code is a command of its own, parsed as such
        "sh -o errexit x.sh",
        "make",
        "make test VERBOSE=1",
        "python3 x.py",
        "rsync -av a b",
        "sort -u -k2 f",
        "split -l 10 f",
        "wget -q -O x u",
        "pandoc -o out.html f.md",
        "gcc -O2 -Wall -o f f.c",
        "ssh -o StrictHostKeyChecking=no h ls",
        "ssh admin@Fileserver uptime",  # a host, not -F
        "ssh h -o",  # an option missing its value runs nothing
        "ssh -- h ls -F",  # after `--`: the host and its command
        "rsync -a notes.txt server:backup/",  # operands, not options
        "rsync --verbose --delete a b",  # long options, not clusters of -e
        "vim -X f",
        "bash Xtool /dev/fd/3",  # a script named Xtool, given /dev/fd/3 as an argument
        "scp -P 22 a b:",
        "git checkout-index --temp x",  # checkout-index's own --temp
        "git format-patch --to=a@b HEAD~1",
        "",
    ],
)
def test_programs_used_plainly_run_nothing_else(command):
    assert runs(words(command)) is None


def test_a_script_computed_at_run_time_is_unknowable():
    found = runs(("sed", "$s", "f"), ("literal", "computed", "literal"))
    assert found == Runs("`sed` script is computed at run time")
    found = runs(("sed", "-e", "$s", "f"), ("literal", "literal", "computed", "literal"))
    assert found == Runs("`sed` script is computed at run time")
    found = runs(("sed", "-f", "$f"), ("literal", "literal", "computed"))
    assert found == Runs("`sed -f $f` runs a script read from a file descriptor")
    found = runs(("sed", "$o", "p"), ("literal", "computed", "literal"))
    assert found == Runs("`sed` script is computed at run time")  # the first operand
    found = runs(("sed", "-$o", "p"), ("literal", "computed", "literal"))
    assert found == Runs("`sed` option `-$o` is computed at run time")
    assert runs(("sed", "p", "$f"), ("literal", "literal", "computed")) is None


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("1e ls", "a command (`ls`"),
        ("e", "a command (`e: the pattern space`"),
        ("$!e ls", "a command (`ls`"),
        ("/x/,/y/ e ls", "a command (`ls`"),
        ("\\,x, e ls", "a command (`ls`"),
        ("/x/I,+3e ls", "a command (`ls`"),
        ("0,/x/e ls", "a command (`ls`"),
        ("1~2e ls", "a command (`ls`"),
        ("1~e ls", "a command (`ls`"),  # GNU sed takes an empty step
        ("/x/b;e ls", "a command (`ls`"),  # `;` ends the label
        ("s/a/b/i;e ls", "a command (`ls`"),
        ("s/a/b/iw out", "writes `out`"),
        ("1,+w out", "writes `out`"),  # GNU sed takes an empty count
        ("a x\\\\\ne ls", "a command (`ls`"),  # an escaped backslash ends the text
        ("s/a/b/pe", "a command (`s///e: the pattern space`"),
        ("s/a/b/wout", "writes `out`"),
        ("2,~4 e ls", "a command (`ls`"),
        ("1{\ne ls\n}", "a command (`ls`"),
        ("p;e ls", "a command (`ls`"),
        ("# comment\ne ls", "a command (`ls`"),
        ("s/a/b/ge", "a command (`s///e: the pattern space`"),
        ("s/a/b/3e", "a command (`s///e: the pattern space`"),
        ("s|a|b|Ie", "a command (`s///e: the pattern space`"),
        ("s/a\\/b/c/e", "a command (`s///e: the pattern space`"),
        ("s/a/b\\\nc/e", "a command (`s///e: the pattern space`"),
        ("a\\\ntext\ne ls", "a command (`ls`"),
        ("b end;e ls", "a command (`ls`"),
        (":a;e ls", "a command (`ls`"),
        ("q5;e ls", "a command (`ls`"),
        ("l 3;e ls", "a command (`ls`"),
        ("y/a/b/;e ls", "a command (`ls`"),
        ("w out", "writes `out`"),
        ("W out; p", "writes `out; p`"),
        ("s/a/b/w out", "writes `out`"),
        ("s/a/b/gpw out", "writes `out`"),
        ("1w /dev/stdout\nw log", "writes `log`"),
        ("s/a/b/ e", "a command (`e: the pattern space`"),  # sed refuses it; read as e
        ("s/a", "not understood"),
        ("s/a/b", "not understood"),
        ("s\\a\\b\\", "not understood"),
        ("s\na\nb\n", "not understood"),
        ("s/a\n/b/", "not understood"),
        ("/x", "not understood"),
        ("1", "not understood"),
        ("k", "not understood"),
        ("y/ab", "not understood"),
        ("\\", "not understood"),
    ],
)
def test_a_sed_script_that_runs_or_writes(script, expected):
    found = sed_script(script)
    assert found is not None and expected in found.why
    assert found.hidden is not expected.startswith("writes")
    assert found.why.startswith("`sed` script ")


@pytest.mark.parametrize(
    "script",
    [
        "p",
        "s/e/w/g",
        "s/x/y/I;s/a/b/M;s/c/d/m;s/e/f/i;s/1/2/p",
        "1d;$d;/x/!d;2,5{p;n}",
        "1,/end/d",
        "1,+p",  # GNU sed takes an empty count
        "sXaXbX",
        "a text; e ls",  # text to the end of the line
        "i\\\none\\\ntwo",
        "c\\\nnew",
        "r file; e x",  # a file name to the end of the line
        "R other",
        "s/a/b/w /dev/stderr",
        ":top\n/x/b top",
        "t;T;b",
        ":aXb",
        "=;l;L;F;z;h;H;g;G;x;n;N;D;P;Q;q 3",
        "v 4.2",
        "y/a\\/b/xyz/",
        "#n\np",
        "",
        "  ;; \n",
    ],
)
def test_a_sed_script_that_only_edits(script):
    assert sed_script(script) is None


# -- variables -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "program"),
    [
        ("PROMPT_COMMAND", "ls", ""),
        ("PS4", "$(x)", ""),
        ("ENV", "rc", "sh"),
        ("BASH_ENV", "rc", "bash"),
        ("GIT_DIR", ".git", "git"),
        ("GIT_WORK_TREE", ".", "git"),
        ("GIT_CONFIG_KEY_0", "alias.x", "git"),
        ("GIT_CONFIG_VALUE_12", "!x", "make"),
        ("GIT_SSH_COMMAND", "ssh -v", "git"),
        ("GIT_PAGER", "less -R", "git"),
        ("PAGER", "most", "man"),
        ("EDITOR", "vim", "git"),
        ("LESS", "+!ls", "less"),
        ("LESS", "-k keys", "less"),
        ("LESS", "-o log", "less"),
        ("LESSOPEN", "|x %s", "less"),
        ("MANPAGER", "sh -c x", "man"),
        ("VIMINIT", ":!x", "vim"),
        ("TAR_OPTIONS", "--to-command=x", "tar"),
        ("RIPGREP_CONFIG_PATH", "rc", "rg"),
        ("HOME", "src/evil", "git"),
        ("HOME", "x", "/usr/bin/bash"),
        ("XDG_CONFIG_HOME", "x", "less"),
        ("HOME", "x", "vim"),
        ("HOME", "x", "man"),
        ("HOME", "x", None),  # for the rest of the line: any program may read it
        ("XDG_CONFIG_HOME", "x", None),
        ("PS4", "x", None),
    ],
)
def test_a_variable_that_hands_a_program_code_or_another_configuration(name, value, program):
    found = assigned(name, value, program)
    assert found is not None and found.hidden and f"`{name}`" in found.why


@pytest.mark.parametrize(
    ("name", "value", "program"),
    [
        ("PATH_X", "x", "git"),
        ("FOO", "bar", ""),
        ("HOME", "/tmp/x", "pytest"),
        ("HOME", "/tmp/x", ""),
        ("PAGER", "cat", "git"),
        ("GIT_PAGER", "/usr/bin/cat", "git"),
        ("GIT_EDITOR", "true", "git"),
        ("EDITOR", ":", "git"),
        ("VISUAL", "", "git"),
        ("MANPAGER", " less ", "man"),
        ("GIT_SEQUENCE_EDITOR", "/bin/true", "git"),
        ("LESS", "-FRX", "less"),
        ("LESS", "-R --mouse", "less"),
        ("GIT_CONFIG_NOSYSTEM", "1", "git"),
    ],
)
def test_a_plain_variable_or_a_pager_that_runs_only_itself(name, value, program):
    assert assigned(name, value, program) is None


def test_device_paths_come_from_descriptors():
    for word in ("/dev/fd/3", "/proc/self/fd/5", "/dev/tcp/h/80", "/dev/../dev/fd/4", "/proc/1"):
        assert device_path(word), word
    for word in ("/dev/null", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "dev/fd/3", "x"):
        assert not device_path(word), word


# -- git pointed at another repository -------------------------------------------------


@pytest.mark.parametrize(
    ("command", "places"),
    [
        ("git status", []),
        ("git -C a -C b log", [("-C", "a"), ("-C", "b")]),
        ("git --git-dir=g --work-tree w log", [("--git-dir", "g"), ("--work-tree", "w")]),
        ("git --git-dir g log", [("--git-dir", "g")]),
        ("git --bare log", [("--bare", "")]),
        ("git --bare", [("--bare", "")]),
        ("git -c x=y -C a log -C b", [("-C", "a")]),
        ("git --namespace -C log", []),
        ("git -C", [("-C", "")]),
        ("/usr/bin/git -C a log", [("-C", "a")]),
        ("gitk -C a", []),
        ("", []),
    ],
)
def test_the_folders_git_is_pointed_at(command, places):
    assert git_places(words(command)) == places


@pytest.fixture
def repos(tmp_path):
    """A workspace repository with a plain folder, a bare repository a model
    could write, a nested repository, and a repository outside."""
    ws = tmp_path / "ws"
    (ws / "src" / "plain").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    evil = ws / "src" / "evil"
    (evil / "objects").mkdir(parents=True)
    (evil / "refs").mkdir()
    (evil / "HEAD").write_text("ref: refs/heads/main\n")
    (evil / "inner").mkdir()
    (ws / "nested" / ".git").mkdir(parents=True)
    (tmp_path / "other" / ".git").mkdir(parents=True)
    os.symlink(ws / "src", ws / "link")
    return ws


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git -C . status",
        "git -C src status",
        "git -C src -C plain log",
        "git -C src/plain/../.. log",
        "git -C link/plain log",
        "git -C '' log",
        "git --git-dir=.git log",
        "git --git-dir=.git/ --work-tree=. status",
        "git -C src --git-dir=../.git log",
        "git --work-tree=src/plain status",
        "git -C .git log",
    ],
)
def test_git_in_the_workspaces_own_repository(repos, command):
    core = tuple(w.strip("'") for w in words(command))
    assert foreign_repository(core, str(repos), str(repos)) is None


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("git -C src/evil log", "`git -C src/evil` uses a repository other than the workspace's"),
        ("git -C src/evil/inner log", "`git -C src/evil/inner`"),
        ("git -C src -C evil log", "`git -C src/evil`"),
        ("git -C link/evil log", "`git -C link/evil`"),
        ("git -C nested log", "`git -C nested`"),
        ("git -C ../other log", "`git -C "),
        ("git -C missing log", "`git -C missing`"),
        ("git --git-dir=src/evil log", "`git --git-dir src/evil`"),
        ("git --git-dir=src log", "`git --git-dir src`"),
        ("git --work-tree=. --git-dir=src/evil log", "`git --git-dir src/evil`"),
        ("git --work-tree=../other log", "`git --work-tree "),
        ("git --bare log", "`git --bare` uses a repository other than the workspace's"),
        ("git -C src/evil --bare log", "`git -C src/evil`"),
        ("git -C src --bare log", "`git --bare`"),
    ],
)
def test_git_pointed_at_another_repository(repos, command, shown):
    why = foreign_repository(words(command), str(repos), str(repos))
    assert why is not None and why.startswith(shown)
    assert why.endswith("whose configuration may run any program")


def test_a_folder_outside_the_workspace_is_shown_in_full(repos):
    why = foreign_repository(words("git -C ../other log"), str(repos), str(repos))
    assert why is not None and why.startswith(f"`git -C {repos.parent / 'other'}` uses")


def test_a_folder_is_placed_from_where_the_command_starts(repos):
    src = str(repos / "src")
    assert foreign_repository(words("git -C evil log"), str(repos), src) is not None
    assert foreign_repository(words("git -C plain log"), str(repos), src) is None
    # After a `cd` on the line a relative folder cannot be placed; an absolute one can.
    moved = foreign_repository(words("git -C plain log"), str(repos), src, moved=True)
    assert moved == ("`git -C plain` after a change of folder: which repository it uses is unknown")
    absolute = f"git -C {repos / 'src' / 'plain'} log"
    assert foreign_repository(words(absolute), str(repos), src, moved=True) is None
    after = f"git -C {repos} --git-dir=.git log"
    assert foreign_repository(words(after), str(repos), src, moved=True) is None
    unplaced = foreign_repository(words("git --git-dir=.git log"), str(repos), src, moved=True)
    assert unplaced and unplaced.startswith("`git --git-dir .git` after a change of folder")
    assert foreign_repository(words("git log"), str(repos), src, moved=True) is None


def test_without_a_repository_of_its_own_every_pointed_git_is_elsewhere(tmp_path):
    (tmp_path / "sub").mkdir()
    why = foreign_repository(words("git -C sub log"), str(tmp_path), str(tmp_path))
    assert why is not None and "`git -C sub`" in why


def test_what_vim_is_told_is_said_in_full():
    assert runs(words("vim -c q f")) == Runs(
        "`vim -c` (-c) runs Ex commands or a script, which may run commands"
    )
