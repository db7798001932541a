"""What every provider shares: reading error pages, when reasoning goes back, naming the endpoint."""

from __future__ import annotations

import pytest

from mdagent.core.errors import ProviderError
from mdagent.providers.config import ProviderConfig
from mdagent.providers.openai import OpenAIProvider
from mdagent.providers.reply import Reply, ToolCall, echoes_reasoning
from mdagent.providers.wire import is_html, one_line, page_title

# -- a proxy's page: its title, never its HTML ----------------------------------------------


@pytest.mark.parametrize(
    "page, title",
    [
        ("<html><head><title>502 Bad Gateway</title></head></html>", "502 Bad Gateway"),
        # Attributes, line breaks and entities inside the title.
        ('<TITLE lang="en">\n  a &amp; b &#124; 524\n</TITLE>', "a & b | 524"),
        # No title: the first heading, its inner tags dropped.
        ("<html><body><h1>Access <b>denied</b></h1></body></html>", "Access denied"),
        ("<html><body><p>nothing to go by</p></body></html>", "a web page without a title"),
        ("<html><head><title>  </title></head><h1>Blocked</h1></html>", "Blocked"),
    ],
)
def test_a_page_is_named_by_its_title(page, title):
    assert page_title(page) == title


@pytest.mark.parametrize(
    "text, content_type, html",
    [
        ("<!DOCTYPE html><html></html>", "", True),
        ("  \n<!-- proxy -->\n<html lang=en>", "text/plain", True),
        ("<body>hi</body>", "", True),
        ("anything", "text/html; charset=utf-8", True),
        ("upstream connect error", "text/plain", False),
        ("<xml/>", "application/xml", False),
        ('{"error": "<html>"}', "application/json", False),
    ],
)
def test_what_counts_as_a_web_page(text, content_type, html):
    assert is_html(text, content_type) is html


def test_a_servers_words_cannot_drive_the_terminal():
    page = "<title>\x1b]0;owned\x07Bad\x1b[2J \u009b31m Gateway\r\n</title>"
    assert page_title(page) == "]0;ownedBad[2J 31m Gateway"
    assert one_line("line one\nline\ttwo\x00") == "line one line two"


# -- when reasoning goes back --------------------------------------------------------------

CALLS = [{"id": "c", "name": "exec", "arguments": {}}]


@pytest.mark.parametrize(
    "message, mode, echoed",
    [
        (
            {"reasoning": "r", "reasoning_field": "reasoning_content", "tool_calls": CALLS},
            None,
            True,
        ),
        ({"reasoning": "r", "reasoning_field": "reasoning_content"}, None, False),
        ({"reasoning": "r", "reasoning_field": "reasoning", "tool_calls": CALLS}, None, False),
        # Sessions stored before the field was kept: not detected, echoed when asked.
        ({"reasoning": "r", "tool_calls": CALLS}, None, False),
        ({"reasoning": "r", "tool_calls": CALLS}, "echo", True),
        ({"reasoning": "r", "reasoning_field": "reasoning"}, "echo", True),
        (
            {"reasoning": "r", "reasoning_field": "reasoning_content", "tool_calls": CALLS},
            "drop",
            False,
        ),
        (
            {"reasoning": "", "reasoning_field": "reasoning_content", "tool_calls": CALLS},
            "echo",
            False,
        ),
    ],
)
def test_reasoning_goes_back_as_detected_unless_the_setting_says(message, mode, echoed):
    assert echoes_reasoning({"role": "assistant", "content": ""} | message, mode) is echoed


def test_model_reasoning_is_read_from_the_settings_and_checked():
    config = ProviderConfig.from_settings({"model": {"reasoning": "echo"}}, environ={})
    assert config.reasoning == "echo"
    assert ProviderConfig.from_settings({}, environ={}).reasoning is None
    with pytest.raises(ProviderError, match="model.reasoning must be echo or drop, not 'yes'"):
        ProviderConfig.from_settings({"model": {"reasoning": "yes"}}, environ={})


# -- a paused turn ---------------------------------------------------------------------------


def test_only_a_pause_without_calls_is_continued_by_sending_it_back():
    assert Reply("half", stop_reason="pause_turn").paused
    call = ToolCall("t", "exec", {}, "{}")
    assert not Reply("", (call,), stop_reason="pause_turn").paused  # the calls run first
    assert not Reply("done", stop_reason="end_turn").paused


def test_a_calls_opaque_fields_and_form_go_in_the_neutral_message():
    call = ToolCall.from_json("c", "exec", "{}", {"extra_content": {"g": 1}}, legacy=True)
    assert Reply("", (call,)).to_message()["tool_calls"] == [
        {
            "id": "c",
            "name": "exec",
            "arguments": {},
            "extra": {"extra_content": {"g": 1}},
            "legacy": True,
        }
    ]


# -- every failure names the endpoint --------------------------------------------------------


class Forgetful(OpenAIProvider):
    """A backend whose reading fails with a message that names no endpoint."""

    def _complete(self, url, *args):
        raise ProviderError("something odd")


def test_a_failure_that_forgot_the_endpoint_still_names_it():
    provider = Forgetful(ProviderConfig(base_url="http://127.0.0.1:9/v1"), environ={})
    with pytest.raises(ProviderError) as err:
        provider.complete("", [{"role": "user", "content": "hi"}], [])
    assert str(err.value) == "something odd — http://127.0.0.1:9/v1/chat/completions (openai)"


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:9/v1", True),
        ("http://127.0.0.2:9/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://LOCALHOST:11434/v1", True),
        ("http://[::1]:9/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.5:8000/v1", False),
        ("http://localhost.example.com/v1", False),
    ],
)
def test_only_a_refused_connection_to_this_machine_is_not_retried(url, local):
    import httpx

    from mdagent.providers.base import refused_here

    refused = httpx.ConnectError("[Errno 111] Connection refused")
    assert refused_here(refused, url) is local
    # Another failure to connect (a name that does not resolve) is retried as before.
    assert not refused_here(httpx.ConnectError("[Errno -2] Name or service not known"), url)
    assert not refused_here(httpx.ReadError("Connection refused"), url)
