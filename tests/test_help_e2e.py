"""Help that answers and suggestions that know both worlds (issue 20, items 3 and 4).

Everything runs the real ``agent`` executable in a temporary workspace.
"""

from __future__ import annotations

import pytest

from conftest import config, write

GREET = """\
tools:
  greet:
    description: Greet someone
    params:
      name: {type: string, description: Who}
      times: {type: integer, description: How often, default: 1}
      loud: {type: boolean, description: Shout, default: false}
      tags: {type: array, items: {type: string}, description: Labels}
    required: [name]
    run: [echo, "hello {name}"]
  shape:
    description: Every kind of option
    params:
      mode: {type: string, enum: [fast, slow], description: Speed}
      path: {type: string, description: Where}
      color: {type: boolean, default: true, description: Colour the output}
      sure: {type: boolean, description: Really}
    required: [path, sure]
    run: [echo, "{path}"]
  say:
    description: Echo what it is given, or nothing
    params: {command: {type: string}}
    run: [echo, "said:{command}"]
commands:
  greet: {description: Greet, tool: greet, arg-mode: parsed}
  shape: {description: Shapes, tool: shape, arg-mode: parsed}
  greet-json: {description: Greet from JSON, tool: greet, arg-mode: json}
  say: {description: Say, tool: say, arg-mode: raw}
"""


@pytest.fixture
def greet(workspace):
    config(workspace, "greet.yaml", GREET)
    write(
        workspace / ".agents" / "skills" / "review" / "SKILL.md",
        "---\nname: review\ndescription: Review code\n"
        "arguments:\n  - {name: base, default: main}\n  - path\n---\nReview $path.\n",
    )
    return workspace


# -- 3. help that answers --------------------------------------------------------------


@pytest.mark.parametrize("name", ["/count", "/term", "/greet", "/greet-json", "/review"])
def test_dash_h_is_help_in_every_argument_mode(greet, run_agent, name):
    long = run_agent(name, "--help")
    short = run_agent(name, "-h")
    assert long.returncode == 0, long.stderr
    assert (short.returncode, short.stdout, short.stderr) == (0, long.stdout, "")
    assert long.stdout.startswith(f"{name} - ")
    assert "\nusage: " in long.stdout


def test_after_a_double_dash_h_is_the_commands_own(greet, run_agent):
    # raw mode: `--` is dropped and `-h` reaches bash as the command line
    term = run_agent("/term", "--", "-h")
    assert term.returncode == 127
    assert "-h: command not found" in term.stderr
    said = run_agent("/say", "--", "-h")
    assert (said.returncode, said.stdout) == (0, "said:-h\n")
    # parsed mode: `--` ends the options, `-h` is the first parameter
    greeted = run_agent("/greet", "--", "-h")
    assert (greeted.returncode, greeted.stdout) == (0, "hello -h\n")


def test_help_is_only_help_when_it_is_the_only_word(greet, run_agent):
    result = run_agent("/greet", "bob", "--help")
    assert result.returncode == 2
    assert "unknown option --help" in result.stderr
    assert "usage: /greet" in result.stderr


@pytest.mark.parametrize("name", ["count", "/count", "COUNT"])
def test_slash_help_name_shows_that_commands_help(greet, run_agent, name):
    expected = run_agent("/count", "--help")
    result = run_agent("/help", name)
    assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, "")
    assert run_agent("help", name).stdout == expected.stdout


def test_the_sessions_help_name_is_the_same_help(greet, run_agent):
    expected = run_agent("/greet", "--help").stdout
    result = run_agent(input="/help greet\n/help /greet\n/exit\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(expected) == 2


def test_slash_help_unknown_name_is_the_unknown_command_message(greet, run_agent):
    result = run_agent("/help", "cuont")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines()[:2] == [
        "agent: unknown command /cuont",
        "did you mean /count?",
    ]
    assert "commands: " in result.stderr
    extra = run_agent("/help", "count", "greet")
    assert (extra.returncode, extra.stderr) == (2, "agent: usage: /help [NAME]\n")
    own = run_agent("/help", "-h")
    assert (own.returncode, own.stdout.splitlines()[0]) == (0, "usage: /help [NAME]")


def test_the_listing_shows_each_commands_arguments(greet, run_agent):
    listing = run_agent("/help")
    assert listing.returncode == 0, listing.stderr
    assert run_agent("/").stdout == listing.stdout
    rows = {line.split()[0]: line for line in listing.stdout.splitlines()}
    assert rows["/greet"].startswith("/greet <name> [--times N] [--loud] [tags...]  ")
    assert rows["/greet"].endswith("Greet")
    assert rows["/count"].startswith("/count <path>  ")
    assert rows["/greet-json"].startswith("/greet-json '<json object>'  ")
    assert rows["/term"].startswith("/term <command line>  ")  # its argument-hint
    assert rows["/review"].startswith("/review [base] <path>  ")
    assert "\n/greet <name> [--times N]" in run_agent("help").stdout


def test_usage_and_parameters_read_naturally(greet, run_agent):
    greet_help = run_agent("/greet", "--help").stdout.splitlines()
    assert greet_help[1] == "usage: /greet <name> [--times N] [--loud] [tags...]"
    params = greet_help[greet_help.index("Parameters:") + 1 :]
    assert params[0].split() == ["name", "string", "Who", "(required)"]
    assert params[1].split() == ["times", "integer", "How", "often", "(default:", "1)"]
    assert params[2].split() == ["loud", "boolean", "Shout"]  # off unless given: nothing to say
    assert params[3].split() == ["tags", "list", "of", "strings", "Labels"]
    shape = run_agent("/shape", "--help").stdout
    # a required word after an optional one cannot be given by position: named
    assert "usage: /shape [--mode fast|slow] --path PATH [--no-color] --sure|--no-sure\n" in shape
    assert "one of fast, slow" in shape
    assert "(default: true)" in shape
    for text in (shape, "\n".join(greet_help), run_agent("/").stdout):
        for unnatural in ("[[", "list[", "[default:", "False", "VALUE"):
            assert unnatural not in text


def test_a_required_argument_left_out_prints_the_usage(greet, run_agent):
    cases = {
        ("/term",): "/term: missing argument: <command line>\nusage: /term <command line>",
        ("/term", "  "): "/term: missing argument: <command line>\nusage: /term <command line>",
        ("/count",): "/count: missing argument: path\nusage: /count <path>",
        ("/greet", "--loud"): "/greet: missing argument: name\nusage: /greet <name>",
        ("/greet-json",): "/greet-json: missing argument: name\nusage: /greet-json '<json",
        ("/greet-json", "{}"): "/greet-json: missing argument: name\n",
    }
    for argv, message in cases.items():
        result = run_agent(*argv)
        assert (result.returncode, result.stdout) == (2, ""), argv
        assert result.stderr.startswith(f"agent: {message}"), (argv, result.stderr)


def test_a_raw_tool_that_needs_nothing_runs_with_nothing(greet, run_agent):
    result = run_agent("/say")
    assert (result.returncode, result.stdout) == (0, "said:\n")


# -- 4. suggestions that know both worlds ------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "hint"),
    [
        ("/tools", "did you mean `agent tools`?"),  # a subcommand typed as a slash command
        ("/sesions", "did you mean `agent sessions`?"),
        ("/cuont", "did you mean /count?"),
        ("/hlep", "did you mean /help?"),  # a built-in of the /name path
        ("/gret", "did you mean /greet?"),
        ("/co", "did you mean /commit-message?"),  # a name it begins, in its own world first
    ],
)
def test_an_unknown_slash_command_suggests_the_nearest_name_in_both_worlds(
    greet, run_agent, typed, hint
):
    result = run_agent(typed)
    assert (result.returncode, result.stdout) == (2, "")
    lines = result.stderr.splitlines()
    assert lines[0] == f"agent: unknown command {typed}"
    assert lines[1] == hint
    assert lines[2].startswith("commands: /commit-message, /count, /greet")


def test_nothing_near_suggests_nothing(greet, run_agent):
    result = run_agent("/zzzzzz")
    assert result.returncode == 2
    assert "did you mean" not in result.stderr


def test_the_reverse_and_built_ins(greet, run_agent):
    assert "Did you mean `agent /greet`?" in run_agent("greet").stderr
    assert "Did you mean `agent help`?" in run_agent("hepl").stderr
    sub = run_agent("help", "tools")  # `agent help NAME` still prefers the subcommand
    assert sub.returncode == 0 and sub.stdout.startswith("Usage: agent tools")


def test_the_static_subcommand_names_match_the_app():
    # person.SUBCOMMANDS lets the /name path suggest `agent tools` without typer.
    import typer

    from mdagent.cli.app import app
    from mdagent.runtime.person import SUBCOMMANDS

    group = typer.main.get_command(app)
    ctx = group.make_context("agent", [], resilient_parsing=True)
    assert sorted(group.list_commands(ctx)) == sorted(SUBCOMMANDS)


def test_help_walks_down_to_a_nested_subcommand(workspace, run_agent):
    shown = run_agent("help", "new", "tool")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("Usage: agent new tool") and "--run" in shown.stdout
    wrong = run_agent("help", "new", "bogus")
    assert wrong.returncode == 2 and "no help for 'new bogus'" in wrong.stderr


def test_the_session_reads_a_double_dash_and_knows_the_shell_subcommands(workspace, run_agent):
    result = run_agent(input="/term -- echo hi\n/doctor\n")
    assert "hi\n" in result.stdout
    assert "unknown command /doctor" in result.stderr
    assert "did you mean `agent doctor` (at the shell)?" in result.stderr


def test_subcommand_usage_lines_read_naturally(workspace, run_agent):
    for words, usage in (
        (["new", "tool"], "Usage: agent new tool [OPTIONS] NAME"),
        (["sessions", "show"], "Usage: agent sessions show [OPTIONS] ID"),
        (["tools"], "Usage: agent tools [OPTIONS] [NAME]"),
    ):
        shown = run_agent(*words, "-h")
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.splitlines()[0] == usage
        assert "{" not in shown.stdout.splitlines()[0]
