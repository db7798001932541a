"""The sharded registry cache (issue 15): a warm ``agent /name`` reads the index and
one shard, yet sees every change to what it runs, through the real executable."""

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import command_skill, config, write
from mdagent.core.layers import Layer
from mdagent.registry.registry import load_registry

TOOLS = (
    "tools:\n"
    "  a:\n    description: says A\n    run: [echo, from-a]\n"
    "  bee:\n    description: says B\n    run: [echo, from-bee]\n"
)


def pick_skill(ws: Path, tool: str, name: str = "pick", description: str = "run") -> Path:
    return write(
        ws / ".agents" / "skills" / name / "SKILL.md",
        f"---\nname: {name}\ndescription: {description}\n"
        f"command-dispatch: tool\ncommand-tool: {tool}\n---\n",
    )


def save_in_place(path: Path, text: str) -> None:
    """Rewrite ``path`` through the same inode, as many editors do, and keep its
    folder's mtime as it was: only the file's own stamp tells."""
    folder = path.parent
    before = folder.stat()
    with open(path, "r+", encoding="utf-8") as fh:
        fh.write(text)
        fh.truncate()
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert folder.stat().st_mtime_ns == before.st_mtime_ns


def cache_files(ws: Path, pattern: str) -> list[Path]:
    return sorted(Path(os.environ["AGENT_STATE_DIR"]).glob(pattern))


@pytest.fixture
def many(workspace):
    """A project whose commands span several shards: 150 skills besides /pick."""
    config(workspace, "tools.yaml", TOOLS)
    for i in range(150):
        command_skill(workspace, f"s{i:03d}")
    return workspace


def test_a_skill_saved_in_place_is_seen_by_its_command(many, run_agent):
    path = pick_skill(many, "a")
    assert run_agent("/pick").stdout == "from-a\n"
    assert run_agent("/pick").stdout == "from-a\n"  # warm
    save_in_place(path, path.read_text().replace("command-tool: a", "command-tool: bee"))
    assert run_agent("/pick").stdout == "from-bee\n"


def test_a_skill_saved_in_place_is_seen_by_help_and_check(many, run_agent):
    pick_skill(many, "a")
    other = many / ".agents" / "skills" / "s042" / "SKILL.md"
    assert run_agent("/pick").returncode == 0  # the cache is warm
    save_in_place(other, other.read_text().replace("description: run", "description: renewed"))
    assert "renewed" in run_agent("/help").stdout
    save_in_place(other, other.read_text().replace("command-tool: exec", "command-tool: nope"))
    checked = run_agent("check")
    assert checked.returncode != 0 and "'nope' names no tool" in checked.stdout + checked.stderr


def test_a_skill_renamed_in_place_to_a_new_name_is_found(many, run_agent):
    path = pick_skill(many, "a")
    assert run_agent("/pick").returncode == 0
    save_in_place(path, path.read_text().replace("name: pick", "name: chosen"))
    done = run_agent("/chosen")
    assert done.returncode == 0 and done.stdout == "from-a\n"


def test_skill_folders_added_and_removed_are_seen(many, run_agent):
    assert run_agent("/s001", "echo", "one").stdout == "one\n"
    pick_skill(many, "bee", name="fresh")
    assert run_agent("/fresh").stdout == "from-bee\n"
    shutil.rmtree(many / ".agents" / "skills" / "fresh")
    gone = run_agent("/fresh")
    assert gone.returncode == 2 and "unknown command /fresh" in gone.stderr
    # A SKILL.md deleted from a folder that stays: its command goes too.
    (many / ".agents" / "skills" / "s002" / "SKILL.md").unlink()
    gone = run_agent("/s002", "echo", "x")
    assert gone.returncode == 2 and "unknown command /s002" in gone.stderr


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d.update(commands=[]),
        lambda d: d.update(stamps={"pick": "not stamps"}),
        lambda d: d["commands"].update(pick="not a record"),
        lambda d: d["commands"].update(pick={"no": "name"}),
    ],
    ids=["commands-list", "stamps", "record-string", "record-fields"],
)
def test_a_shard_of_the_wrong_shape_is_rebuilt(many, run_agent, damage):
    pick_skill(many, "a")
    assert run_agent("/pick").returncode == 0
    for shard in cache_files(many, "registry-*.shard-*.json"):
        data = json.loads(shard.read_text())
        if "pick" in data["commands"]:
            damage(data)
            shard.write_text(json.dumps(data))
    done = run_agent("/pick")
    assert (done.returncode, done.stdout, done.stderr) == (0, "from-a\n", "")
    assert run_agent("/pick").stdout == "from-a\n"  # and the rebuilt cache works


def test_a_partly_written_shard_is_never_used(many, run_agent):
    pick_skill(many, "a")
    assert run_agent("/pick").returncode == 0
    shards = cache_files(many, "registry-*.shard-*.json")
    assert len(shards) > 1
    for shard in shards:
        text = shard.read_bytes()
        shard.write_bytes(text[: len(text) // 2])  # a writer that stopped halfway
    done = run_agent("/pick")
    assert (done.returncode, done.stdout, done.stderr) == (0, "from-a\n", "")
    listing = run_agent("/help").stdout
    assert "/s149" in listing and "/pick" in listing


def many_skills(tmp_path, count=200):
    """A layer of ``count`` skills ``s000``…, compiled once: ``(layers, cache folder, layer)``."""
    layer = tmp_path / "l"
    for i in range(count):
        write(
            layer / "skills" / f"s{i:03d}" / "SKILL.md",
            f"---\nname: s{i:03d}\ndescription: skill {i}\n---\nBody\n",
        )
    layers, cache = [Layer(layer, "option")], tmp_path / "state"
    load_registry(layers, cache)
    return layers, cache, layer


def test_a_warm_lookup_reads_only_its_own_shard(tmp_path):
    layers, cache, layer = many_skills(tmp_path)
    shards = sorted(cache.glob("registry-*.shard-*.json"))
    assert len(shards) > 1
    mine = next(s for s in shards if "s007" in json.loads(s.read_text())["skills"])
    for shard in shards:
        if shard != mine:
            shard.write_text("{not json")
    warm = load_registry(layers, cache)
    assert warm.skills["s007"].description == "skill 7"
    assert warm.command("s007").description == "skill 7"
    assert warm.from_cache  # the damaged shards were never read
    assert len(warm.skills) == 200  # reading them all notices the damage: compiled again
    assert not warm.from_cache


def test_broken_settings_refuse_a_warm_command_without_reading_skills(workspace, run_agent):
    command_skill(workspace, "t")
    config(workspace, "agent.yaml", "policy:\n  deny: 42\n")
    for attempt in ("cold", "warm"):
        done = run_agent("/t", "echo", "hi")
        assert done.returncode != 0 and done.stdout == "", attempt
        assert "agent.yaml:2" in done.stderr and "Traceback" not in done.stderr, attempt
    layers = [Layer(workspace / ".agents", "project")]
    cache = workspace.parent / "state"
    load_registry(layers, cache)
    for shard in cache.glob("registry-*.shard-*.json"):
        shard.write_text("{not json")
    warm = load_registry(layers, cache)
    assert [p.line for p in warm.settings_errors] == [2]
    assert warm.from_cache  # the settings' errors are in the index


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # a writer that stopped halfway
        lambda text: json.dumps({**json.loads(text), "commands": {"pick": {"no": "name"}}}),
        lambda text: json.dumps({**json.loads(text), "stamps": [["not", "a"]]}),
    ],
    ids=["torn", "record", "stamps"],
)
def test_a_damaged_listing_is_never_used_by_help(many, run_agent, damage):
    pick_skill(many, "a")
    assert run_agent("/help").returncode == 0
    (listing,) = cache_files(many, "registry-*.commands.json")
    listing.write_text(damage(listing.read_text()))
    done = run_agent("/help")
    assert done.returncode == 0 and done.stderr == ""
    assert "/pick" in done.stdout and "/s149" in done.stdout


def test_shards_a_smaller_registry_no_longer_needs_are_removed(tmp_path):
    layers, cache, layer = many_skills(tmp_path)
    assert len(list(cache.glob("registry-*.shard-*.json"))) == 4
    for i in range(10, 200):
        shutil.rmtree(layer / "skills" / f"s{i:03d}")
    registry = load_registry(layers, cache)
    assert len(registry.skills) == 10
    assert [p.name.split(".")[1] for p in cache.glob("registry-*.shard-*.json")] == ["shard-0"]
    assert not list(cache.glob(".registry-*"))  # no temporary file left behind


# -- /help's own cache files: the text for a pipe, the rows for a terminal ------------


def help_on_terminal(ws: Path, columns: int = 60) -> str:
    from test_terminal_e2e import Terminal

    with Terminal("/help", cwd=ws, columns=columns, env={"COLUMNS": str(columns)}) as term:
        assert term.wait() == 0
        return term.text


def test_a_description_saved_in_place_is_seen_by_help_on_a_pipe_and_a_terminal(many, run_agent):
    other = many / ".agents" / "skills" / "s042" / "SKILL.md"
    assert run_agent("/help").returncode == 0  # the cache is warm
    assert "/s042" in help_on_terminal(many)
    save_in_place(
        other,
        other.read_text().replace("description: run", "description: |\n  Fresh words\n  more"),
    )
    piped = run_agent("/help").stdout.splitlines()
    assert [line.split(None, 2)[2] for line in piped if line.startswith("/s042 ")] == [
        "Fresh words"
    ]
    assert "Fresh words" in help_on_terminal(many)


def _with(**fields):
    return lambda text: json.dumps({**json.loads(text), **fields})


def _in_groups(change):
    """Damage every ``[folder, names, sizes, mtimes]`` stamp group of a help file."""
    return lambda text: json.dumps(
        {**json.loads(text), "groups": [change(g) for g in json.loads(text)["groups"]]}
    )


TORN = lambda text: text[: len(text) // 2]  # noqa: E731 (a writer that stopped halfway)
ANOTHER_COMPILE = _with(token="0" * 16)
HELP_DAMAGE = {
    # the text and stamps /help prints to a pipe
    "help-torn": ("help", TORN),
    "help-another-compile": ("help", ANOTHER_COMPILE),
    "help-text-not-a-string": ("help", _with(text=["/pick"])),
    "help-groups-not-a-list": ("help", _with(groups={"a": 1})),
    "help-stamps-of-unequal-length": ("help", _in_groups(lambda g: [g[0], g[1], [], g[3]])),
    # os.stat(3) would stat a file descriptor, not a path
    "help-a-path-not-a-string": ("help", _in_groups(lambda g: [g[0], [3] * len(g[1]), *g[2:]])),
    "help-a-folder-not-a-string": ("help", _in_groups(lambda g: [3, *g[1:]])),
    "help-a-stale-stamp": ("help", _in_groups(lambda g: [*g[:3], [m + 1 for m in g[3]]])),
    # a folder that is not there: its skills are not either
    "help-a-folder-gone": ("help", _in_groups(lambda g: [g[0] + "-gone", *g[1:]])),
    # the rows /help fits to a terminal
    "rows-torn": ("help-rows", TORN),
    "rows-another-compile": ("help-rows", ANOTHER_COMPILE),
    "rows-of-the-wrong-shape": ("help-rows", _with(rows=[["/pick"]])),
    "rows-not-strings": ("help-rows", _with(rows=[[1, 2]])),
    "rows-not-a-list": ("help-rows", _with(rows={"/pick": "run"})),
}


@pytest.mark.parametrize("damage", list(HELP_DAMAGE))
def test_a_damaged_help_file_is_rebuilt(many, run_agent, damage):
    pick_skill(many, "a")
    piped, shown = run_agent("/help").stdout, help_on_terminal(many)
    assert "/pick" in piped and "/s149" in piped and "/pick" in shown
    which, change = HELP_DAMAGE[damage]
    (path,) = cache_files(many, f"registry-*.{which}.json")
    token = json.loads(path.read_text())["token"]
    path.write_text(change(path.read_text()))
    done = run_agent("/help")
    assert (done.returncode, done.stdout, done.stderr) == (0, piped, "")
    assert help_on_terminal(many) == shown
    assert json.loads(path.read_text())["token"] not in (token, "0" * 16)  # compiled again
    assert run_agent("/help").stdout == piped  # and the rebuilt cache works


def test_help_rows_are_the_compiled_listing(tmp_path):
    """A warm registry's cached rows and text are what a fresh compile lists."""
    layer = tmp_path / "l"
    write(layer / "config" / "t.yaml", TOOLS + "commands:\n  b: {tool: bee}\n")
    write(
        layer / "skills" / "p" / "SKILL.md",
        "---\nname: p\ndescription: |\n  One\n  two\nargument-hint: '[x]'\n---\nBody\n",
    )
    write(
        layer / "skills" / "q" / "SKILL.md",
        "---\nname: q\ndescription: hidden\nuser-invocable: false\n---\nBody\n",
    )
    layers, cache = [Layer(layer, "option")], tmp_path / "state"
    cold = load_registry(layers, cache)
    warm = load_registry(layers, cache)
    assert warm.from_cache and not cold.from_cache
    rows = [["/b <text...>", ""], ["/p [x]", "One"]]
    assert warm.listing_rows() == cold.listing_rows() == rows
    assert warm.listing_text() == cold.listing_text() == "/b <text...>\n/p [x]        One"
    assert warm.from_cache  # nothing was compiled again to list them
