"""Editing a layer's YAML as text (mdagent.declarations.edit): "always" adds an allow rule,
revoke takes one out; comments, order and formatting survive, every edit checked."""

from __future__ import annotations

import threading

import pytest
import yaml

from mdagent.core.errors import ConfigError
from mdagent.declarations.edit import add_allow_rule, remove_allow_rule, replace_file

LAYOUTS = {
    "block list": (
        "# settings\npolicy:\n  mode: ask\n  allow:\n    - read_file  # reads\n  deny: [x]\n# end\n"
    ),
    "compact list": "policy:\n  allow:\n  - a\n  - b\n",
    "flow list": "policy:\n  allow: [read_file]  # reads\n",
    "empty flow list": "policy:\n  allow: []  # none\n",
    "no allow": "policy:  # rules\n  # how to ask\n  mode: ask\n",
    "empty allow": "policy:\n  allow:\n  deny: []  # none\n",
    "no policy": "model:\n  name: llama3  # small\n",
    "empty policy": "policy:\n# later\nmodel: {}\n",
    "comments only": "# nothing yet\n",
    "no final newline": "model: {name: x}  # c",
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_add_allow_rule_keeps_content_and_comments(tmp_path, layout):
    original = LAYOUTS[layout]
    target = tmp_path / "agent.yaml"
    target.write_text(original)
    before = yaml.safe_load(original) or {}
    assert add_allow_rule(target, 'exec(git log --format="%H")') is True
    text = target.read_text()
    for line in original.splitlines():
        if "#" in line:
            assert line.split("#", 1)[1] in text  # every comment survives
    after = yaml.safe_load(text)
    policy = before.get("policy") or {}
    expected_allow = [*(policy.get("allow") or []), 'exec(git log --format="%H")']
    assert after["policy"]["allow"] == expected_allow
    assert {k: v for k, v in after.items() if k != "policy"} == {
        k: v for k, v in before.items() if k != "policy"
    }
    assert {k: v for k, v in after["policy"].items() if k != "allow"} == {
        k: v for k, v in policy.items() if k != "allow"
    }


def test_add_allow_rule_creates_the_file_and_skips_duplicates(tmp_path):
    target = tmp_path / ".agents" / "config" / "agent.yaml"
    assert add_allow_rule(target, "read_file") is True
    assert add_allow_rule(target, "read_file") is False
    assert yaml.safe_load(target.read_text()) == {"policy": {"allow": ["read_file"]}}


def test_add_allow_rule_reformats_only_comment_free_files(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("policy: {mode: ask}\n")
    add_allow_rule(target, "read_file")
    assert yaml.safe_load(target.read_text()) == {"policy": {"mode": "ask", "allow": ["read_file"]}}
    target.write_text("policy: {mode: ask}  # keep me\n")
    with pytest.raises(ConfigError, match="by hand"):
        add_allow_rule(target, "read_file")
    assert target.read_text() == "policy: {mode: ask}  # keep me\n"


def test_add_allow_rule_refuses_broken_yaml(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("policy: [unclosed\n")
    with pytest.raises(ConfigError):
        add_allow_rule(target, "read_file")
    assert target.read_text() == "policy: [unclosed\n"


def test_add_allow_rule_refuses_a_file_with_a_duplicate_key(tmp_path):
    # The registry refuses such a file; editing it would hide that behind a
    # rule that seems saved.
    target = tmp_path / "agent.yaml"
    text = "policy:\n  mode: ask\n  mode: full\n"
    target.write_text(text)
    with pytest.raises(ConfigError, match="duplicate key 'mode'") as err:
        add_allow_rule(target, "read_file")
    assert err.value.line == 3
    assert target.read_text() == text


def test_concurrent_always_answers_lose_no_rule(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("# mine\npolicy:\n  allow:\n    - read_file\n")
    rules = [f"exec(make target{i})" for i in range(12)]
    threads = [threading.Thread(target=add_allow_rule, args=(target, r)) for r in rules]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    saved = yaml.safe_load(target.read_text())["policy"]["allow"]
    assert sorted(saved) == sorted(["read_file", *rules])
    assert target.read_text().startswith("# mine\n")
    assert not list(tmp_path.glob(".*.tmp"))


RULE = 'exec(git log --format="%H")'


@pytest.mark.parametrize("layout", LAYOUTS)
def test_remove_allow_rule_undoes_add_allow_rule_and_keeps_comments(tmp_path, layout):
    original = LAYOUTS[layout]
    target = tmp_path / "agent.yaml"
    target.write_text(original)
    add_allow_rule(target, RULE)
    added = target.read_text()
    assert remove_allow_rule(target, RULE) == next(
        i for i, line in enumerate(added.splitlines(), 1) if "git log" in line
    )
    text = target.read_text()
    for line in added.splitlines():
        if "#" in line and "git log" not in line:
            assert line.split("#", 1)[1] in text  # every other comment survives
    before = yaml.safe_load(original) or {}
    after = yaml.safe_load(text) or {}
    allow = ((before.get("policy") or {}).get("allow")) or []
    assert ((after.get("policy") or {}).get("allow") or []) == allow
    assert {k: v for k, v in after.items() if k != "policy"} == {
        k: v for k, v in before.items() if k != "policy"
    }
    assert remove_allow_rule(target, RULE) is None  # gone: nothing more to remove


@pytest.mark.parametrize(
    ("text", "left"),
    [
        (
            "policy:\n  allow:\n    - a\n    - rule: x\n      reason: why\n  # next\n  deny: [d]\n",
            "policy:\n  allow:\n    - a\n  # next\n  deny: [d]\n",
        ),
        ("policy:\n  allow: [a, x, b]  # c\n", "policy:\n  allow: [a, b]  # c\n"),
        ("policy:\n  allow: [a, x]  # c\n", "policy:\n  allow: [a]  # c\n"),
        ("policy:\n  allow:\n    - x  # saved\n  # more\n", "policy:\n  allow: []\n  # more\n"),
    ],
)
def test_remove_allow_rule_layouts(tmp_path, text, left):
    target = tmp_path / "agent.yaml"
    target.write_text(text)
    assert remove_allow_rule(target, "x") is not None
    assert target.read_text() == left


def test_remove_allow_rule_with_an_explicit_key_is_dumped_not_a_crash(tmp_path):
    # `? allow` puts the key's colon on the next line: no text edit finds it, so the
    # file (without comments) is written again, and the rule is gone.
    target = tmp_path / "agent.yaml"
    target.write_text("policy:\n  ? allow\n  :\n    - x\n")
    assert remove_allow_rule(target, "x") is not None
    assert yaml.safe_load(target.read_text()) == {"policy": {"allow": []}}


def test_remove_allow_rule_without_the_rule_or_the_file(tmp_path):
    assert remove_allow_rule(tmp_path / "missing.yaml", "x") is None
    target = tmp_path / "agent.yaml"
    target.write_text("policy:\n  deny: [x]\n  allow: [y]\n")
    assert remove_allow_rule(target, "x") is None
    assert target.read_text() == "policy:\n  deny: [x]\n  allow: [y]\n"


def test_remove_allow_rule_refuses_to_lose_comments(tmp_path):
    target = tmp_path / "agent.yaml"
    # The list is shared through an anchor: removing the item would change `base` too.
    original = "base: &rules [x, y]\npolicy:\n  allow: *rules  # shared\n"
    target.write_text(original)
    with pytest.raises(ConfigError, match="remove it by hand"):
        remove_allow_rule(target, "x")
    assert target.read_text() == original
    target.write_text("base: &rules [x, y]\npolicy:\n  allow: *rules\n")
    assert remove_allow_rule(target, "x") == 1
    assert yaml.safe_load(target.read_text()) == {"base": ["x", "y"], "policy": {"allow": ["y"]}}


# -- "always" and revoke: the text edits -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "after"),
    [
        ("policy:\nmodel: {}\n", 'policy:\n  allow:\n    - "x"\nmodel: {}\n'),
        ("policy:\n  mode: ask\n", 'policy:\n  allow:\n    - "x"\n  mode: ask\n'),
        (
            "policy:\n  mode: ask\nmodel: {}\n",
            'policy:\n  allow:\n    - "x"\n  mode: ask\nmodel: {}\n',
        ),
    ],
)
def test_always_adds_its_rule_where_it_belongs(tmp_path, text, after):
    target = tmp_path / "agent.yaml"
    target.write_text(text)
    add_allow_rule(target, "x")
    assert target.read_text() == after


def test_a_lone_allow_rule_is_kept_beside_the_new_one(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("policy:\n  allow: read_file\n")
    add_allow_rule(target, "x")
    assert yaml.safe_load(target.read_text())["policy"]["allow"] == ["read_file", "x"]


def test_a_refusal_to_add_names_the_file(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("policy: {mode: ask}  # keep me\n")
    with pytest.raises(ConfigError) as err:
        add_allow_rule(target, "read_file")
    assert err.value.path == str(target)


@pytest.mark.parametrize(
    ("text", "left"),
    [
        # an item of three lines, then another
        (
            "policy:\n  allow:\n    - rule: x\n      reason: a\n      note: b\n    - y\n",
            "policy:\n  allow:\n    - y\n",
        ),
        # a block scalar ends at the start of the next line
        ("policy:\n  allow:\n    - |-\n      x\n    - y\n", "policy:\n  allow:\n    - y\n"),
        (
            "policy:\n  allow:\n    - >-\n      x\n  deny: [z]\n",
            "policy:\n  allow: []\n  deny: [z]\n",
        ),
    ],
)
def test_revoke_removes_the_whole_item_and_nothing_after_it(tmp_path, text, left):
    target = tmp_path / "agent.yaml"
    target.write_text(text)
    assert remove_allow_rule(target, "x") == 3
    assert target.read_text() == left


def test_revoke_says_where_the_file_is_broken_and_what_to_do(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("policy:\n  allow: [x\n")
    with pytest.raises(ConfigError) as err:
        remove_allow_rule(target, "x")
    assert (err.value.path, err.value.line) == (str(target), 3)
    target.write_text("base: &rules [x, y]\npolicy:\n  allow: *rules  # shared\n")
    with pytest.raises(ConfigError) as err:
        remove_allow_rule(target, "x")
    assert err.value.message.endswith("without losing comments; remove it by hand")


def test_revoke_dumps_a_comment_free_file_in_its_own_order_and_characters(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("zeta: é\nbase: &rules [x, y]\npolicy:\n  allow: *rules\n")
    remove_allow_rule(target, "x")
    assert target.read_text() == ("zeta: é\nbase:\n- x\n- y\npolicy:\n  allow:\n  - y\n")


# -- where errors point, what a fallback dump looks like, what the file keeps -----------


def test_a_broken_file_is_refused_with_its_path_line_and_column(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("policy:\n  allow: [x\n")
    for edit in (add_allow_rule, remove_allow_rule):
        with pytest.raises(ConfigError) as err:
            edit(target, "x")
        assert (err.value.path, err.value.line, err.value.col) == (str(target), 3, 1)


def test_always_refuses_a_file_that_is_not_a_mapping(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("- a\n")
    with pytest.raises(ConfigError) as err:
        add_allow_rule(target, "x")
    assert (err.value.message, err.value.path) == (
        "cannot add `x`: the file is not a mapping",
        str(target),
    )


def test_always_refuses_to_replace_a_commented_scalar_policy(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("policy: ask  # c\n")
    with pytest.raises(ConfigError, match="by hand"):
        add_allow_rule(target, "x")
    assert target.read_text() == "policy: ask  # c\n"


def test_a_refusal_to_revoke_names_the_file(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("base: &rules [x, y]\npolicy:\n  allow: *rules  # shared\n")
    with pytest.raises(ConfigError) as err:
        remove_allow_rule(target, "x")
    assert err.value.path == str(target)


def test_always_dumps_a_comment_free_file_in_its_own_order_and_characters(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("zeta: é\npolicy: {mode: ask}\n")
    add_allow_rule(target, "ü")
    assert target.read_text() == "zeta: é\npolicy:\n  mode: ask\n  allow:\n  - ü\n"


@pytest.mark.parametrize(
    ("text", "after"),
    [
        # non-ASCII stays as it is written
        ("policy:\n  allow: []\n", 'policy:\n  allow: ["é"]\n'),
        # a dash inside the first item is not the list's dash
        ("policy:\n  allow:\n    - a-b\n", 'policy:\n  allow:\n    - a-b\n    - "é"\n'),
        # a last item ending at the start of the next line (a block scalar)
        (
            "policy:\n  allow:\n    - |-\n      a\n  deny: [z]  # d\n",
            'policy:\n  allow:\n    - |-\n      a\n    - "é"\n  deny: [z]  # d\n',
        ),
        # a last item ending in column 1 (a quote closed at the line's start)
        (
            'policy:\n  allow:\n    - "a\n"\n  # c\n',
            'policy:\n  allow:\n    - "a\n"\n    - "é"\n  # c\n',
        ),
    ],
)
def test_always_inserts_the_item_as_text(tmp_path, text, after):
    target = tmp_path / "agent.yaml"
    target.write_text(text)
    assert add_allow_rule(target, "é") is True
    assert target.read_text() == after


@pytest.mark.parametrize(
    ("text", "left"),
    [
        # an item ending in column 1 goes whole
        ('policy:\n  allow:\n    - "x\n"\n    - y\n  # c\n', "policy:\n  allow:\n    - y\n  # c\n"),
        # the colon after the key, not one inside a tag before it
        (
            "policy:\n  !<tag:yaml.org,2002:str> allow:\n    - x\n  # c\n",
            "policy:\n  !<tag:yaml.org,2002:str> allow: []\n  # c\n",
        ),
    ],
)
def test_revoke_edits_odd_layouts_as_text(tmp_path, text, left):
    target = tmp_path / "agent.yaml"
    target.write_text(text)
    assert remove_allow_rule(target, "x") == 3
    assert target.read_text() == left


def test_edits_keep_the_file_mode(tmp_path):
    target = tmp_path / "agent.yaml"
    target.write_text("policy:\n  allow: []\n")
    target.chmod(0o600)
    add_allow_rule(target, "x")
    assert target.stat().st_mode & 0o777 == 0o600
    remove_allow_rule(target, "x")
    assert target.stat().st_mode & 0o777 == 0o600


def test_replace_file_creates_a_missing_file_readable_by_all(tmp_path):
    target = tmp_path / "new.yaml"
    replace_file(target, "a: 1\r\n")
    assert target.stat().st_mode & 0o777 == 0o644
    assert target.read_bytes() == b"a: 1\r\n"
