"""The fast reader of plain YAML: whatever it reads, libyaml reads the same; the rest it leaves."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdagent.core.errors import ConfigError
from mdagent.core.yamlfast import NOT_SIMPLE, read
from mdagent.core.yamlsource import Located, LocatedList, load_yaml, position
from mdagent.declarations.skills import split_front_matter

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "openclaw-skills"
EXAMPLES = int(os.environ.get("YAMLFAST_EXAMPLES", "400"))


def libyaml(text: str) -> object:
    return load_yaml(text, "x.yaml", fast=False)


def assert_same(fast: object, slow: object, where: str = "") -> None:
    """Equal values of the same types, with the same positions, all the way down."""
    assert type(fast) is type(slow), f"{where}: {type(fast).__name__} != {type(slow).__name__}"
    if isinstance(slow, Located):
        assert fast.at == slow.at, f"{where}: mapping at {fast.at} != {slow.at}"
        assert list(fast) == list(slow), f"{where}: keys {list(fast)} != {list(slow)}"
        assert fast.lines == slow.lines, f"{where}: key positions {fast.lines} != {slow.lines}"
        for key in slow:
            assert type(key) is type(next(k for k in fast if k == key)), f"{where}: key {key!r}"
            assert_same(fast[key], slow[key], f"{where}.{key}")
    elif isinstance(slow, LocatedList):
        assert fast.at == slow.at, f"{where}: sequence at {fast.at} != {slow.at}"
        assert fast.items_at == slow.items_at, f"{where}: item positions"
        assert len(fast) == len(slow), f"{where}: {fast!r} != {slow!r}"
        for index, (a, b) in enumerate(zip(fast, slow, strict=True)):
            assert_same(a, b, f"{where}[{index}]")
    else:
        assert fast == slow, f"{where}: {fast!r} != {slow!r}"


def check(text: str) -> bool:
    """Whether the fast reader read ``text``; when it did, libyaml agrees."""
    fast = read(text)
    if fast is NOT_SIMPLE:
        return False
    try:
        slow = libyaml(text)
    except ConfigError as err:
        pytest.fail(f"read {text!r} as {fast!r}, libyaml refuses it: {err}")
    assert_same(fast, slow, "root")
    return True


READ = [
    "",
    "# only a comment\n\n",
    "a: 1\n",
    "\nname: demo\ndescription: Say hi to someone\n",
    "a: -12\nb: +3\nc: 0\nd: 1_000\ne: yes\nf: Off\ng: ~\nh: null\ni:\nj: NULL\n",
    # Every spelling of YAML 1.1's booleans and nulls, and words that are neither.
    "a: [yes, Yes, YES, no, No, NO, true, True, TRUE, false, False, FALSE]\n"
    "b: [on, On, ON, off, Off, OFF, ~, null, Null, NULL, y, n, nULL, yEs, oN]\n"
    "c:\n  - on\n  - Off\n  - NULL\n  - Y\nd: {x: on, y: no, z: ~}\n",
    "key: value # a comment\nother: 'quoted # not a comment'\n",
    "a: 'it''s'\nb: \"double: quoted\"\nc: ''\n",
    'a: "tab\\there\\n \\"quoted\\" \\\\ \\x41\\u00e9\\U0001F510 \\/ \\_"\n',
    "a: C#\nb: x:y\nc: https://example.com/a?b=c#d\n",
    "outer:\n  inner:\n    deep: x\n  next: y\nlast: z\n",
    "list:\n  - a\n  - 'b c'\n  - [1, 2]\n  - {k: v}\nafter: 1\n",
    "list:\n- a\n- b\nafter: 1\n",
    "params:\n  who: {type: string, description: Who to greet}\nrun: [echo, 'hi {who}']\n",
    'metadata: {"openclaw": {"requires": {"bins": ["sh"]}}}\n',
    'metadata:\n  {\n    "openclaw":\n      {\n        "emoji": "🔐",\n'
    '        "requires": { "bins": ["op"] },\n        "install":\n          [\n'
    '            {\n              "id": "brew",\n              "bins": ["op"],\n'
    "            },\n          ],\n      },\n  }\nafter: 1\n",
    "a: [x, y,]  # trailing comma and comment\nb: {}\nc: []\n",
    "2: one\nyes: bool key\n'2': text key\n",
    "tools:\n  hi:\n    aliases: [h]\n    required: [name]\n",
    "  indented: root\n  second: 2\n",
    "a: [x,\n  y]\n",
    "a:\n  [x, y]\nb: 2\n",
    "rules:\n  - exec(git *)\n  - read(**/*.md)\n",
    "a: # nothing here\nb:\n  # a comment line\n  c: 1\n",
    "a: [x  , y ,z]  # c\nb: {k:  v ,  l: w}\nc: [x, # note\n    y]\n",
    "a: b #c #d\nb: keep X #c\nc: keepX\nd: b   \ne: [x]  \nf: b\u3000\n",
    "a: {\"k\":v, 'l':w}\nb: {k: Xv}\nc: ['it''s', {k: 'v''w'}]\nd: 1__0\n",
    'a: "\\ue000 \\U0010FFFF"\n',
    "Xa: 1\nXb: [X]\nc:\n  - Xd\n  - \u3000x\ne: b\u3000 #c\n",
    "name: 1password\nversion: 1.0.0\nwhat: 3 tools\nsign: -x\n",
    "tests:\n  - name: one\n    argv: [a]\n  - name: two\n    deep:\n      - x\nafter: 1\n",
    "tests:\n  -   argv: [a, b]\n      with: {x: y}\n  - {k: v}\n",
]

LEFT_TO_LIBYAML = [
    "a: &x 1\nb: *x\n",
    "a: !!str 1\n",
    "a: |\n  block\n",
    "a: >\n  folded\n",
    'a: "bad \\q escape"\n',
    'a: "half \\ud800 of a pair"\n',
    "a: 1.5\n",
    "a: 2024-01-01\n",
    "a: 0x1f\n",
    "a: 010\n",
    "a: .inf\n",
    "a: 1\na: 2\n",
    "a:\tx\n",
    "a: x\r\nb: y\r\n",
    "a: multi\n  line plain\n",
    "a: 'multi\n  line quoted'\n",
    "a: b: c\n",
    "k:\n  - a\n  -xy z\n",
    "a: 'x' X #y\n",
    "a: {k:Xv}\n",
    "a: {Xk:v}\n",
    "a: 'x' \u3000#y\n",
    'a: "\\udfff"\n',
    "\u3000a: b\n",
    "a: {b:c}\n",
    "a: b:\n",
    "- a\n- b\n",
    "just text\n",
    "<<: {a: 1}\n",
    "a: x\n   b: y\n",
    "a:\n- x\n  - y\n",
    "key : spaced\n",
    "? complex\n: key\n",
    "a: [x\n  y]\n",
    "a: [x,\ny]\n",
    "a: {b: {c}}\n",
    "a: [a:b]\n",
    "a: @x\n",
    "---\na: 1\n",
    "a: 1\n...\n",
    "%YAML 1.1\n---\na: 1\n",
    "a: 'x' trailing\n",
    "a: [x] trailing\n",
    "a: 'unclosed\n",
    "a: =\n",
    "a: \x85\n",
    "k" * 1100 + ": long key\n",
    "a: {" + "k" * 1025 + ": v}\n",  # libyaml's limit holds for flow keys too
    "a: {k" + " " * 1030 + ": v}\n",
    "a: {'" + "k" * 1100 + "': v}\n",
    "a: " + "[" * 100 + "]" * 100 + "\n",  # nesting deeper than libyaml's path can build
    "a: " + "[{a: " * 70 + "x" + "}]" * 70 + "\n",
    "".join(" " * (2 * i) + ("- k:\n" if i else "k:\n") for i in range(70)),
    "a: " + "1" * 4301 + "\n",  # longer than Python turns into an int
    "a: -\n",
    "a: - x\n",
    "a: [-]\n",
    "a: [- x]\n",
    "a: 2024-1-2\n",
    "a: 1:30\n",
]


@pytest.mark.parametrize("text", READ)
def test_the_plain_part_of_yaml_is_read_as_libyaml_reads_it(text: str) -> None:
    assert check(text), f"left to libyaml: {text!r}"


@pytest.mark.parametrize("text", LEFT_TO_LIBYAML)
def test_everything_else_is_left_to_libyaml(text: str) -> None:
    assert read(text) is NOT_SIMPLE


def test_depth_counts_open_collections_only() -> None:
    """64 collections deep is read, 65 is libyaml's; many collections one after another are
    no deeper than one."""
    assert check("a: " + "[" * 63 + "x" + "]" * 63 + "\n")  # the root mapping is the 64th
    assert read("a: " + "[" * 64 + "x" + "]" * 64 + "\n") is NOT_SIMPLE
    many = "".join(
        f"k{n}: {{a: [b, {{c: d}}]}}\nl{n}:\n  m: [x]\n  s:\n    - y\n" for n in range(200)
    )
    assert check(many)
    assert read(many + "z: " + "[" * 64 + "x" + "]" * 64 + "\n") is NOT_SIMPLE


def test_errors_are_still_libyamls_with_their_positions() -> None:
    with pytest.raises(ConfigError) as err:
        load_yaml("a: 1\nb: 2\na: 3\n", "x.yaml")
    assert (err.value.line, err.value.col) == (3, 1)
    assert "duplicate key 'a'" in err.value.message
    with pytest.raises(ConfigError) as err:
        load_yaml("a: b: c\n", "x.yaml")
    assert err.value.line == 1


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is absent")
def test_real_front_matter_is_read_fast_and_the_same() -> None:
    read_fast = 0
    files = sorted(CORPUS.glob("*/SKILL.md"))
    for skill in files:
        front, _, _ = split_front_matter(skill.read_text(encoding="utf-8"), str(skill))
        read_fast += check(front)
    # A cold compile is fast only if most real skills take this path.
    assert read_fast >= len(files) * 0.8, f"{read_fast} of {len(files)}"


def test_a_compile_is_the_same_with_or_without_the_fast_reader(tmp_path, monkeypatch) -> None:
    """Skills, commands, tools and problems: real files compile alike either way."""
    import shutil

    import mdagent.core.yamlfast
    from mdagent.core.layers import Layer
    from mdagent.core.specs import compact
    from mdagent.registry.compile import compile_registry

    root = Path(__file__).resolve().parents[1]
    layer = tmp_path / ".agents"
    shutil.copytree(root / "config", layer / "config")
    shutil.copytree(root / "skills", layer / "skills")
    if CORPUS.is_dir():
        for skill in CORPUS.iterdir():
            if skill.is_dir():
                shutil.copytree(skill, layer / "skills" / skill.name)

    def compiled() -> tuple:
        registry, _ = compile_registry([Layer(layer, "project")])
        records = [registry.skills, registry.commands, registry.tools]
        return (*({k: compact(v) for k, v in r.items()} for r in records), registry.problems)

    fast = compiled()
    monkeypatch.setattr(mdagent.core.yamlfast, "read", lambda text: NOT_SIMPLE)
    assert compiled() == fast
    assert len(fast[0]) >= 2


def test_the_projects_own_yaml_files_read_the_same() -> None:
    root = Path(__file__).resolve().parents[1]
    files = [p for p in root.rglob("*.yaml") if ".venv" not in p.parts and ".git" not in p.parts]
    files += [p for p in root.rglob("SKILL.md") if ".venv" not in p.parts]
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        if path.name == "SKILL.md":
            try:
                text = split_front_matter(text, str(path))[0]
            except ConfigError:
                continue
        check(text)


# -- generated documents --------------------------------------------------------

WORD = st.text(alphabet="abcuxntXYZ019_-.:#'\" ~+<=@&*!|>%?,[]{}é🔐\\/", min_size=1, max_size=8)
SCALAR_WORDS = st.one_of(
    WORD,
    st.sampled_from(["yes", "No", "on", "true", "~", "null", "NULL", "0", "-1", "+7", "1_0"]),
    st.sampled_from(["1.5", "0x1", "010", "2024-01-02", ".nan", "<<", "=", "1:2"]),
    st.integers(-(10**6), 10**6).map(str),
)
KEYS = st.one_of(st.sampled_from(["a", "b", "name", "c-d", "e_f", "1", "yes", "x.y"]), WORD)
CLEAN_KEYS = st.from_regex(r"k[a-z0-9_-]{0,8}", fullmatch=True)


def quoted(word: str, style: str) -> str:
    if style == "single":
        return "'" + word.replace("'", "''") + "'"
    if style == "double":
        return '"' + word + '"'
    return word


# Text as people write it: words without YAML's special characters.
CLEAN_WORDS = st.lists(
    st.from_regex(r"[a-zA-Z_/é🔐][a-z0-9_/é()*]{0,6}", fullmatch=True), min_size=1, max_size=3
).map(" ".join)


@st.composite
def scalars(draw, clean: bool = False) -> str:
    word = draw(CLEAN_WORDS if clean else SCALAR_WORDS)
    return quoted(word, draw(st.sampled_from(["plain", "plain", "single", "double"])))


@st.composite
def flow(draw, depth: int = 0, clean: bool = False) -> str:
    # Clean documents indent a collection's later lines right of any key.
    down = "\n" + " " * (16 if clean else 4)
    sep = draw(st.sampled_from([", ", ",", " , ", "," + down, ",\n  # c" + down]))
    if depth > 2 or draw(st.booleans()):
        return draw(scalars(clean))
    if draw(st.booleans()):
        items = draw(st.lists(flow(depth + 1, clean), max_size=3))
        trailing = draw(st.sampled_from(["", ",", down[:-2]])) if items else ""
        return "[" + sep.join(items) + trailing + "]"
    keys = draw(st.lists(CLEAN_KEYS if clean else KEYS, max_size=3, unique=True))
    colon = draw(
        st.sampled_from([": ", " : ", ":" + down] if clean else [": ", ":", " : ", ":" + down])
    )
    pairs = [
        quoted(k, draw(st.sampled_from(["plain", "double", "single"])))
        + colon
        + draw(flow(depth + 1, clean))
        for k in keys
    ]
    return "{" + sep.join(pairs) + "}"


@st.composite
def block(draw, indent: int = 0, depth: int = 0, clean: bool = False) -> str:
    pad = " " * indent
    lines = []
    for key in draw(st.lists(CLEAN_KEYS if clean else KEYS, min_size=1, max_size=4, unique=clean)):
        head = pad + quoted(key, draw(st.sampled_from(["plain", "plain", "single", "double"])))
        kind = draw(st.sampled_from(["scalar", "flow", "map", "seq", "empty", "comment"]))
        if kind == "map" and depth < 3:
            step = draw(st.sampled_from([1, 2, 4]))
            lines.append(head + ":\n" + draw(block(indent + step, depth + 1, clean)))
        elif kind == "seq" and depth < 3:
            step = draw(st.sampled_from([0, 2]))
            items = draw(
                st.lists(st.one_of(scalars(clean), flow(1, clean=clean)), min_size=1, max_size=3)
            )
            lines.append(head + ":\n" + "".join(f"{pad}{' ' * step}- {item}\n" for item in items))
        elif kind == "flow":
            lines.append(head + ": " + draw(flow(clean=clean)) + "\n")
        elif kind == "empty":
            lines.append(head + ":\n")
        elif kind == "comment":
            lines.append(head + ": " + draw(scalars(clean)) + " # note\n" + "\n")
        else:
            lines.append(head + ": " + draw(scalars(clean)) + "\n")
    return "".join(lines)


EDITS = [" ", "  ", "\n", "\n  ", "#", " #", ":", ": ", "-", "- ", "'", '"', "[", "]", "{", "}"]
EDITS += [",", "\t", "&a ", "*a", "!", "|", ">", "x", "1", "\r", "\\", "?", "%", "---\n"]


@st.composite
def documents(draw) -> str:
    text = draw(block())
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()) and text:
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + draw(st.sampled_from(EDITS)) + text[at:]
    return text


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents())
def test_whatever_the_fast_reader_reads_libyaml_reads_the_same(text: str) -> None:
    check(text)


def test_the_generated_documents_mostly_take_the_fast_path() -> None:
    """The property above would hold for a reader that reads nothing: this one reads
    every generated document written as people write them."""

    @settings(max_examples=200, deadline=None, database=None)
    @given(block(clean=True))
    def every(text: str) -> None:
        assert check(text), f"left to libyaml: {text!r}"

    every()


def test_a_collection_made_by_hand_is_the_plain_one_placed_at_the_start():
    # Located is a dict and LocatedList a list: made from items, they hold them;
    # nothing read places them, so a position in them is the document's start.
    assert Located({"a": 1}, b=2) == {"a": 1, "b": 2}
    assert Located([("a", 1)]) == {"a": 1}
    assert LocatedList([1, 2]) == [1, 2]
    assert position(Located(), ("name",)) == (1, 1)
    assert position(LocatedList(), (0,)) == (1, 1)
