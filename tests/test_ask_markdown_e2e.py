"""`agent ask` renders its answer as Markdown on a terminal, plain text elsewhere (issue 17)."""

from conftest import ask
from model_server import ModelServer
from test_terminal_e2e import Terminal

ANSWER = "Some **bold** words and `code`."


def test_markdown_is_rendered_on_a_terminal(workspace):
    with (
        ModelServer([{"text": ANSWER}]) as server,
        Terminal(
            "--provider", "openai", "--base-url", server.url, "ask", "go", cwd=workspace
        ) as term,
    ):
        assert term.wait() == 0
        assert "Some bold words and code." in term.text
        assert "**bold**" not in term.text


def test_a_pipe_gets_the_answer_as_written(run_agent):
    with ModelServer([{"text": ANSWER}]) as server:
        result = ask(run_agent, server)
    assert result.returncode == 0
    assert result.stdout == ANSWER + "\n"
