import contextlib
import io
import json
import os
import shlex
import socket
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdagent import Toolbox, ToolContext
from mdagent.declarations.kinds import IMPLEMENTATION_KEYS, check_implementation
from mdagent.tools.implementations import make_handler

PY = sys.executable


def ctx(**kw):
    kw.setdefault("env", dict(os.environ))
    return ToolContext(**kw)


def declared(box, name, spec, params=None, required=()):
    """Add a declared tool to ``box`` the way the registry would."""
    params = params or {}
    box.add(
        name,
        description=name,
        params=params,
        required=required,
        handler=make_handler(spec, name=name, params=params, base_dir=".", required=required),
    )
    return box


# -- run / shell: values reach the child verbatim ---------------------------------

PRINT_ARGS = "import json, sys\nsys.stdout.write(json.dumps(sys.argv[1:]))\n"


@pytest.fixture(scope="module")
def printargs(tmp_path_factory):
    script = tmp_path_factory.mktemp("bin") / "printargs.py"
    script.write_text(PRINT_ARGS)
    return str(script)


def brace_safe(text):
    return text.replace("{", "{{").replace("}", "}}")


TRICKY = [
    "'",
    '"',
    ";",
    "&&",
    "|",
    "$(id)",
    "`id`",
    "\n",
    "*",
    "?",
    "-",
    "--x",
    "é",
    "日本",
    "\\",
    "$HOME",
    " ",
    "#",
    "{",
    "}",
    "~",
    "!",
    "\t",
    "<",
    ">",
]
WORDS = st.lists(
    st.one_of(
        st.sampled_from(TRICKY),
        st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=4),
    ),
    max_size=5,
).map("".join)
ARGS_PARAMS = {
    "a": {"type": "array", "items": {"type": "string"}},
    "b": {"type": "string"},
    "c": {"type": "string"},
    "d": {"type": "string"},
}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(a=st.lists(WORDS, max_size=4), b=WORDS, c=WORDS, d=WORDS)
def test_run_and_shell_children_receive_values_as_literal_words(printargs, a, b, c, d):
    args = {"a": a, "b": b, "c": c, "d": d}
    run = make_handler(
        {"run": [PY, printargs, "{a}", "{b}", "x={c}"]}, name="t", params=ARGS_PARAMS, base_dir="."
    )
    result = run(args, ctx())
    assert json.loads(result["stdout"]) == [*a, b, f"x={c}"], result

    script = brace_safe(f"{shlex.quote(PY)} {shlex.quote(printargs)}")
    template = script + " {a} {b} '{c} sq' \"dq {d}\" pre{d}post"
    shell = make_handler({"shell": template}, name="t", params=ARGS_PARAMS, base_dir=".")
    result = shell(args, ctx())
    assert json.loads(result["stdout"]) == [*a, b, f"{c} sq", f"dq {d}", f"pre{d}post"], result


def test_run_result_shape_and_workdir(tmp_path):
    run = make_handler(
        {"run": [PY, "-c", "import os; print(os.getcwd())"]}, name="t", params={}, base_dir="."
    )
    result = run({}, ctx(workdir=str(tmp_path)))
    assert result["stdout"].strip() == str(tmp_path)
    assert result["exit_code"] == 0 and result["truncated"] is False
    assert set(result) == {"stdout", "stderr", "exit_code", "duration_ms", "truncated"}


def test_run_missing_executable_is_command_not_found():
    run = make_handler({"run": ["mdagent-no-such-program", "x"]}, name="t", params={}, base_dir=".")
    result = run({}, ctx())
    assert result["error"] == "command not found: mdagent-no-such-program"
    assert result["exit_code"] == 127


def test_run_non_zero_exit_is_a_failure_that_keeps_the_output():
    box = declared(Toolbox(), "t", {"run": [PY, "-c", "print('partial'); raise SystemExit(3)"]})
    result = box.run("t", {}, ctx())
    assert not result.ok
    assert result.data["error"] == "exit status 3"
    assert result.data["exit_code"] == 3 and result.data["stdout"] == "partial\n"


def test_run_timeout_kills_and_reports_124():
    run = make_handler(
        {"run": [PY, "-c", "import time; time.sleep(30); print('late')"], "timeout": 0.3},
        name="t",
        params={},
        base_dir=".",
    )
    result = run({}, ctx())
    assert "late" not in result["stdout"]  # killed at its timeout, not waited for
    assert result["exit_code"] == 124 and result["timed_out"] is True
    assert result["error"] == "timed out after 0.3 s"


def test_run_timeout_defaults_to_exec_settings():
    run = make_handler(
        {"run": [PY, "-c", "import time; time.sleep(30)"]}, name="t", params={}, base_dir="."
    )
    result = run({}, ctx(settings={"exec": {"timeout": 0.3}}))
    assert result["error"] == "timed out after 0.3 s"


def test_run_ignores_an_exec_setting_that_is_not_a_mapping():
    run = make_handler({"run": [PY, "-c", "print('ran')"]}, name="t", params={}, base_dir=".")
    result = run({}, ctx(settings={"exec": "fast"}))
    assert result["stdout"] == "ran\n" and "error" not in result


def test_run_streams_to_output_when_someone_watches():
    out = io.StringIO()
    run = make_handler({"run": [PY, "-c", "print('live')"]}, name="t", params={}, base_dir=".")
    result = run({}, ctx(output=out, env=dict(os.environ)))
    assert result["streamed"] is True
    assert out.getvalue() == "live\n" and result["stdout"] == "live\n"


def test_run_without_ctx_env_gets_the_scrubbed_environment(monkeypatch):
    monkeypatch.setenv("MDAGENT_TEST_API_KEY", "s3cret")
    monkeypatch.setenv("MDAGENT_TEST_PLAIN", "visible")
    code = (
        "import os; print(os.environ.get('MDAGENT_TEST_API_KEY'), os.environ['MDAGENT_TEST_PLAIN'])"
    )
    run = make_handler({"run": [PY, "-c", code]}, name="t", params={}, base_dir=".")
    assert run({}, ToolContext())["stdout"] == "None visible\n"


def test_shell_runs_pipelines_with_quoted_values():
    shell = make_handler(
        {"shell": "printf '%s\\n' {words} | wc -l"},
        name="t",
        params={"words": {"type": "array"}},
        base_dir=".",
    )
    result = shell({"words": ["a b", "c; echo injected"]}, ctx())
    assert result["stdout"].strip() == "2" and "error" not in result


# -- handler ----------------------------------------------------------------------


def write(base, rel, source):
    path = base / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def test_handler_with_args_only_and_default_function_name(tmp_path):
    write(tmp_path, "handlers/wc.py", "def run(args):\n    return {'n': len(args['s'])}\n")
    handler = make_handler({"handler": "handlers/wc.py"}, name="wc", params={}, base_dir=tmp_path)
    assert handler({"s": "abc"}, ctx()) == {"n": 3}


def test_handler_with_context_and_named_function(tmp_path):
    write(
        tmp_path,
        "handlers/where.py",
        """
        def where(args, ctx):
            return {"workdir": ctx.workdir, "greeting": args["g"]}
        """,
    )
    box = Toolbox()
    box.add(
        "where",
        description="",
        handler=make_handler(
            {"handler": "handlers/where.py:where"}, name="where", params={}, base_dir=tmp_path
        ),
    )
    result = box.run("where", {"g": "hi"}, ctx(workdir="/w"))
    assert result.to_dict() == {"workdir": "/w", "greeting": "hi", "ok": True}


def test_handler_syntax_error_is_a_one_line_failure(tmp_path):
    write(tmp_path, "handlers/bad.py", "x = 1\n\ndef run(args:\n    return {}\n")
    handler = make_handler({"handler": "handlers/bad.py"}, name="bad", params={}, base_dir=tmp_path)
    result = handler({}, ctx())
    assert result["error"].startswith("cannot load handlers/bad.py: SyntaxError: ")
    assert result["error"].endswith("(line 3)") and "\n" not in result["error"]
    assert not (tmp_path / "handlers" / "__pycache__").exists()


def test_handler_import_error_names_the_line(tmp_path):
    write(tmp_path, "h.py", "import os\nimport mdagent_no_such_module\n")
    result = make_handler({"handler": "h.py"}, name="h", params={}, base_dir=tmp_path)({}, ctx())
    assert result["error"] == (
        "cannot load h.py: ModuleNotFoundError: No module named 'mdagent_no_such_module' (line 2)"
    )


def test_handler_missing_function(tmp_path):
    write(tmp_path, "h.py", "def other(args):\n    return {}\n")
    result = make_handler({"handler": "h.py:count"}, name="h", params={}, base_dir=tmp_path)(
        {}, ctx()
    )
    assert result == {"error": "cannot load h.py: it has no function count()"}


def test_handler_exception_propagates_to_the_toolbox_as_a_typed_failure(tmp_path):
    write(tmp_path, "h.py", "def run(args):\n    raise ValueError('bad input: ' + args['x'])\n")
    box = Toolbox()
    box.add(
        "h",
        description="",
        handler=make_handler({"handler": "h.py"}, name="h", params={}, base_dir=tmp_path),
    )
    result = box.run("h", {"x": "42"})
    assert not result.ok
    assert result.data["error"] == "bad input: 42" and result.data["type"] == "ValueError"
    assert result.data["name"] == "h"


def test_handler_is_reloaded_when_its_file_changes(tmp_path):
    path = write(tmp_path, "h.py", "def run(args):\n    return {'v': 1}\n")
    handler = make_handler({"handler": "h.py"}, name="h", params={}, base_dir=tmp_path)
    assert handler({}, ctx()) == {"v": 1}
    path.write_text("def run(args):\n    return {'v': 'two'}\n")
    assert handler({}, ctx()) == {"v": "two"}


def test_same_handler_path_in_two_layers_are_two_modules(tmp_path):
    for layer, value in (("one", 1), ("two", 2)):
        write(tmp_path / layer, "handlers/h.py", f"def run(args):\n    return {{'v': {value}}}\n")
    one = make_handler({"handler": "handlers/h.py"}, name="h", params={}, base_dir=tmp_path / "one")
    two = make_handler({"handler": "handlers/h.py"}, name="h", params={}, base_dir=tmp_path / "two")
    assert one({}, ctx()) == {"v": 1} and two({}, ctx()) == {"v": 2}


def test_hanging_handler_times_out(tmp_path):
    # The handler blocks until the test lets it go (a FIFO with no writer yet):
    # the call can only have ended by its timeout, the handler still running.
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    write(tmp_path, "h.py", f"def run(args):\n    open({str(gate)!r}).read()\n    return {{}}\n")
    handler = make_handler(
        {"handler": "h.py", "timeout": 0.2}, name="h", params={}, base_dir=tmp_path
    )
    try:
        result = handler({}, ctx())
    finally:
        os.close(os.open(gate, os.O_WRONLY | os.O_NONBLOCK))  # the handler's thread ends
    assert result == {"error": "timed out after 0.2 s", "timed_out": True, "exit_code": 124}


def test_handler_with_timeout_still_returns_and_raises(tmp_path):
    write(
        tmp_path,
        "h.py",
        """
        def run(args, ctx):
            if args.get("fail"):
                raise KeyError("missing")
            return {"ok_value": 1}
        """,
    )
    box = Toolbox()
    box.add(
        "h",
        description="",
        handler=make_handler(
            {"handler": "h.py", "timeout": 5}, name="h", params={}, base_dir=tmp_path
        ),
    )
    assert box.run("h", {}).to_dict() == {"ok_value": 1, "ok": True}
    assert box.run("h", {"fail": True}).data["type"] == "KeyError"


@pytest.mark.parametrize("timeout", [None, 5])
def test_handler_calling_sys_exit_is_a_failure_not_the_end(tmp_path, timeout):
    write(tmp_path, "h.py", "import sys\ndef run(args):\n    sys.exit(0)\n")
    spec = {"handler": "h.py"} if timeout is None else {"handler": "h.py", "timeout": timeout}
    handler = make_handler(spec, name="h", params={}, base_dir=tmp_path)
    result = handler({}, ctx())  # called directly: no toolbox to catch SystemExit
    assert result == {"error": "h.py: run() called exit(0)", "type": "SystemExit"}


def test_handler_module_calling_sys_exit_at_import_is_a_failure(tmp_path):
    write(tmp_path, "h.py", "import sys\nsys.exit(3)\ndef run(args):\n    return {}\n")
    result = make_handler({"handler": "h.py"}, name="h", params={}, base_dir=tmp_path)({}, ctx())
    assert result == {"error": "cannot load h.py: SystemExit: 3 (line 2)"}


# -- http -------------------------------------------------------------------------


#: The paths of the trickles a client stayed for to the end (a deadline's test
#: asserts the event "the server was left mid-answer", not the clock).
TRICKLES_FINISHED: list[str] = []


class Recorder(BaseHTTPRequestHandler):
    def _reply(self, status, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _seen(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        parts = urlsplit(self.path)
        return {
            "method": self.command,
            "path": parts.path,
            "query": parse_qs(parts.query),
            "token": self.headers.get("X-Token"),
            "content_type": self.headers.get("Content-Type"),
            "body": body,
        }

    def do_GET(self):
        if self.path.startswith("/missing"):
            self._reply(404, b"no such thing", "text/plain")
        elif self.path.startswith("/big"):
            self._reply(200, b"x" * 1_500_000, "text/plain")
        elif self.path.startswith("/slow"):
            time.sleep(2)
            self._reply(200, {})
        elif self.path.startswith("/to-localhost"):
            self.send_response(302)
            self.send_header("Location", f"http://localhost:{self.server.server_port}/echo")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path.startswith("/trickle"):  # a byte every 0.1 s for 30 s
            self.send_response(200)
            self.send_header("Content-Length", "300")
            self.end_headers()
            with contextlib.suppress(OSError):
                for _ in range(300):
                    self.wfile.write(b".")
                    self.wfile.flush()
                    time.sleep(0.1)
                TRICKLES_FINISHED.append(self.path)
        else:
            self._reply(200, self._seen())

    do_POST = do_PUT = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def http_tool(http, params=None, timeout=None):
    spec = {"http": http, **({"timeout": timeout} if timeout else {})}
    return declared(Toolbox(), "web", spec, params or {})


def test_http_get_encodes_url_values(server):
    params = {"name": {"type": "string"}, "q": {"type": "string"}}
    box = http_tool({"url": brace_safe(server) + "/echo/{name}?q={q}"}, params)
    result = box.run("web", {"name": "a/b c", "q": "x&y=z#é"})
    assert result.ok, result
    seen = result.data["json"]
    assert seen["path"] == "/echo/a%2Fb%20c"
    assert seen["query"] == {"q": ["x&y=z#é"]}
    assert result.data["status"] == 200
    assert result.data["headers"]["content-type"] == "application/json"
    assert json.loads(result.data["output"]) == seen and result.data["truncated"] is False


def test_http_post_json_keeps_types_and_sends_headers(server):
    params = {
        "n": {"type": "integer"},
        "tags": {"type": "array"},
        "opt": {"type": "string"},
        "token": {"type": "string"},
    }
    box = http_tool(
        {
            "method": "post",
            "url": brace_safe(server) + "/items",
            "headers": {"X-Token": "{token}", "X-Optional": "{opt}"},
            "json": {"n": "{n}", "tags": "{tags}", "label": "n={n}", "opt": "{opt}"},
        },
        params,
    )
    result = box.run("web", {"n": 3, "tags": ["a", "b"], "token": "t0k"})
    seen = result.data["json"]
    assert seen["method"] == "POST" and seen["token"] == "t0k"
    assert seen["content_type"] == "application/json"
    assert json.loads(seen["body"]) == {"n": 3, "tags": ["a", "b"], "label": "n=3"}


def test_http_body_template(server):
    box = http_tool(
        {"method": "PUT", "url": brace_safe(server) + "/b", "body": "hello {who}"},
        {"who": {"type": "string"}},
    )
    assert box.run("web", {"who": "you"}).data["json"]["body"] == "hello you"


def test_http_error_status_is_a_failure_with_the_response(server):
    result = http_tool({"url": brace_safe(server) + "/missing"}).run("web", {})
    assert not result.ok
    assert result.data["error"] == "HTTP 404"
    assert result.data["status"] == 404 and result.data["text"] == "no such thing"
    assert result.data["output"] == "no such thing"


def test_http_connection_refused_is_one_line():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = http_tool({"url": f"http://127.0.0.1:{port}/x"}).run("web", {})
    assert not result.ok
    assert result.data["error"].startswith(f"GET http://127.0.0.1:{port} failed: ")
    assert "\n" not in result.data["error"]


def test_http_timeout(server):
    result = http_tool({"url": brace_safe(server) + "/slow"}, timeout=0.3).run("web", {})
    assert result.data["error"] == "timed out after 0.3 s" and result.data["timed_out"] is True


def test_http_timeout_bounds_the_whole_call_not_each_read(server):
    TRICKLES_FINISHED.clear()
    result = http_tool({"url": brace_safe(server) + "/trickle"}, timeout=1).run("web", {})
    assert result.data["error"] == "timed out after 1 s" and result.data["timed_out"] is True
    assert TRICKLES_FINISHED == []  # the call ended while the server still had 30 s to send


def guarded_http_tool(url, policy_settings, tmp_path, caller="person"):
    from mdagent.safety.policy import Policy
    from mdagent.tools.builtins import register_builtins

    settings = {"policy": policy_settings}
    box = Toolbox(policy=Policy(settings, workdir=tmp_path))
    register_builtins(box, ["fetch"])
    declared(box, "web", {"http": {"url": url}})
    return lambda: box.run("web", {}, ctx(settings=settings, caller=caller))


@pytest.mark.parametrize("caller", ["person", "model"])
def test_http_redirect_to_a_denied_domain_is_refused(server, tmp_path, caller):
    run = guarded_http_tool(
        brace_safe(server) + "/to-localhost",
        {"mode": "full", "deny": ["fetch(domain:localhost)"]},
        tmp_path,
        caller,
    )
    result = run()
    assert not result.ok and result.data["code"] == "DENIED"
    assert result.data["error"].startswith("redirect to http://localhost:")
    assert result.data["error"].endswith("refused: denied by policy rule `fetch(domain:localhost)`")


def test_http_redirect_is_judged_as_a_fetch_would_be(server, tmp_path):
    run = guarded_http_tool(
        brace_safe(server) + "/to-localhost",
        {"mode": "allowlist", "allow": ["web", "fetch(domain:127.0.0.1)"]},
        tmp_path,
        "model",
    )
    result = run()
    assert not result.ok and result.data["code"] == "DENIED"
    assert result.data["allow_rule"] == "fetch(domain:localhost)"


def test_http_url_meets_the_fetch_deny_rules_however_spelt(server, tmp_path):
    port = server.rsplit(":", 1)[1]
    run = guarded_http_tool(
        f"http://0x7f.1:{port}/echo", {"deny": ["fetch(domain:127.0.0.1)"]}, tmp_path
    )
    result = run()
    assert not result.ok and result.data["code"] == "DENIED"
    assert result.data["error"] == "denied by policy rule `fetch(domain:127.0.0.1)`"


def test_http_url_needs_no_fetch_allow_rule(server, tmp_path):
    # The tool call was approved as itself; only fetch's deny rules apply to its URL.
    run = guarded_http_tool(
        brace_safe(server) + "/echo", {"mode": "allowlist", "allow": ["web"]}, tmp_path, "model"
    )
    assert run().ok


def test_http_response_is_capped(server):
    result = http_tool({"url": brace_safe(server) + "/big"}).run("web", {})
    assert result.ok and result.data["truncated"] is True
    assert len(result.data["text"]) == 1_000_000


# -- tool + with ----------------------------------------------------------------------


@pytest.fixture
def echo_box():
    box = Toolbox()
    box.add(
        "echo",
        description="",
        params={"text": {"type": "string"}, "n": {"type": "integer"}},
        required=["text"],
        handler=lambda args: {"output": args["text"] * args.get("n", 1)},
    )
    return box


def test_composition_goes_through_the_toolbox_and_its_hooks(echo_box):
    seen = []
    echo_box.before("echo")(lambda args: seen.append(dict(args)))
    params = {"name": {"type": "string"}, "times": {"type": "integer", "default": 2}}
    declared(
        echo_box, "greet", {"tool": "echo", "with": {"text": "hi {name} ", "n": "{times}"}}, params
    )
    result = echo_box.run("greet", {"name": "Bo"})
    assert result.to_dict() == {"output": "hi Bo hi Bo ", "ok": True}
    assert seen == [{"text": "hi Bo ", "n": 2}]


def test_composition_preserves_inner_errors_and_validation(echo_box):
    declared(echo_box, "bad", {"tool": "echo", "with": {"text": "{n}"}}, {"n": {"type": "integer"}})
    result = echo_box.run("bad", {"n": 5})
    assert not result.ok
    assert result.data["error"] == "value at `/text` is not of type 'string'"


def test_composition_without_with_passes_arguments_on(echo_box):
    declared(echo_box, "say", {"tool": "echo"}, {"text": {"type": "string"}})
    assert echo_box.run("say", {"text": "x"}).data == {"output": "x"}


def test_composition_cycle_stops_with_a_clear_error():
    box = Toolbox()
    declared(box, "a", {"tool": "b"})
    declared(box, "b", {"tool": "a"})
    result = box.run("a", {})
    assert not result.ok
    assert "call each other too deeply" in result.data["error"]
    assert "a -> b -> a" in result.data["error"]


# -- check_implementation ---------------------------------------------------------------

P = {"path": {"type": "string"}, "n": {"type": "integer"}}


def check(spec, params=P, names=("exec", "wc"), base_dir=".", **kw):
    return check_implementation(spec, params, set(names), base_dir, **kw)


def test_valid_implementations_have_no_errors(tmp_path):
    write(tmp_path, "handlers/wc.py", "def run(args):\n    return {}\n")
    assert check({"run": ["wc", "{path}", "-n{n}"], "timeout": 5}) == []
    assert check({"shell": "wc {path} | tail -{n}"}) == []
    assert check({"handler": "handlers/wc.py"}, base_dir=tmp_path) == []
    assert check({"handler": "handlers/wc.py:run"}, base_dir=tmp_path) == []
    assert (
        check({"http": {"method": "put", "url": "https://x.test/{path}", "json": {"a": "{n}"}}})
        == []
    )
    assert check({"tool": "exec", "with": {"command": "wc {path}"}}) == []
    assert IMPLEMENTATION_KEYS == ("run", "shell", "handler", "http", "tool")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "no implementation: give one of run, shell, handler, http, tool"),
        (
            {"run": ["a"], "shell": "b"},
            "more than one implementation (run, shell): give exactly one",
        ),
        ({"run": ["a"], "with": {"x": 1}}, "`with` is only used with `tool`"),
        ({"handler": "handlers/nope.py"}, "handler: file not found: handlers/nope.py"),
        ({"handler": "handlers/nope.py:1x"}, "handler: '1x' is not a function name"),
        ({"tool": "nope"}, "tool: nope names no tool"),
        ({"run": ["wc", "{pth}"]}, "run: {pth} names no parameter (params: path, n)"),
        ({"run": ["wc", "{path"]}, "run: unclosed '{'"),
        ({"run": []}, "run: must be a non-empty list"),
        ({"shell": "wc {file}"}, "shell: {file} names no parameter"),
        ({"shell": "echo \\{path}"}, "shell: placeholder {path} cannot be used after a backslash"),
        ({"http": {"url": "https://x.test/{q}"}}, "http.url: {q} names no parameter"),
        ({"http": {"url": "https://x.test/", "headers": {"A": "{q}"}}}, "http.headers: {q} names"),
        ({"http": {"url": "https://x.test/", "json": {"a": ["{q}"]}}}, "http.json: {q} names"),
        ({"http": {"url": "https://x.test/", "body": "x{q}"}}, "http.body: {q} names"),
        ({"tool": "exec", "with": {"command": "{q}"}}, "with: {q} names no parameter"),
        (
            {"http": {"url": "https://x.test/", "method": "TRACE"}},
            "http.method: 'TRACE' is not one of",
        ),
        ({"http": {"url": "ftp://x.test/"}}, "http.url: must start with http:// or https://"),
        ({"http": {"url": "{path}"}}, "http.url: must start with http:// or https://"),
        ({"http": {"url": "https://{path}/"}}, "http.url: must start with http:// or https://"),
        ({"http": {"url": "https://x.test/", "json": {}, "body": "b"}}, "http: give json or body"),
        ({"http": {"url": "https://x.test/", "verb": "GET"}}, "http: unknown key 'verb'"),
        ({"run": ["a"], "timeout": -1}, "timeout: must be a positive number"),
    ],
)
def test_check_implementation_errors(spec, message):
    errors = check(spec)
    assert any(e.startswith(message) for e in errors), errors


def test_check_implementation_reports_a_tool_calling_itself():
    assert check({"tool": "wc"}, name="wc") == ["tool: wc calls itself"]


def test_check_implementation_with_no_params_says_so():
    assert check({"run": ["x", "{a}"]}, params={}) == [
        "run: {a} names no parameter (params: none declared)"
    ]


def test_composing_exec_quotes_values_like_a_shell_template(tmp_path):
    from mdagent.core.calls import ToolContext
    from mdagent.tools.builtins import register_builtins
    from mdagent.tools.toolbox import Toolbox

    box = Toolbox()
    register_builtins(box, names=["exec"])
    spec = {"tool": "exec", "with": {"command": "wc -l < {path}"}}
    params = {"path": {"type": "string"}}
    box.add(
        "lines",
        description="d",
        params=params,
        handler=make_handler(spec, name="lines", params=params, base_dir=tmp_path),
    )
    (tmp_path / "a b.txt").write_text("1\n2\n")
    ctx = ToolContext(workdir=str(tmp_path))
    assert box.run("lines", {"path": "a b.txt"}, ctx).data["stdout"].strip() == "2"
    hostile = box.run("lines", {"path": "x; echo PWNED"}, ctx)
    assert "PWNED" not in hostile.data.get("stdout", "") and not hostile.ok


def test_composing_exec_refuses_unsafe_shell_positions_at_load_time(tmp_path):
    spec = {"tool": "exec", "with": {"command": "echo `cat {path}`"}}
    errors = check_implementation(spec, {"path": {"type": "string"}}, {"exec"}, tmp_path)
    assert errors and "backticks" in errors[0]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"shell": "wc {path} # {n}"}, "shell: placeholder {n} cannot be used in a comment"),
        ({"shell": "[[ {n} -gt 2 ]] && wc {path}"}, "shell: placeholder {n} cannot be used as an"),
        (
            {"run": ["sh", "-c", "wc {path}"]},
            "run: placeholder {path} cannot be used as the script",
        ),
        ({"tool": "exec", "with": {"command": "eval {path}"}}, "with.command: placeholder {path}"),
    ],
)
def test_check_implementation_refuses_positions_read_again(spec, message):
    errors = check(spec)
    assert any(e.startswith(message) for e in errors), errors


def test_check_messages_point_at_the_line_of_their_key():
    from mdagent.declarations.kinds import message_line

    lines = {"shell": 7, "with": 9, "with.command": 10}
    assert message_line("shell: placeholder {x} cannot be used", lines, 3) == 7
    assert message_line("with.command: placeholder {x}", lines, 3) == 10
    assert message_line("with.other: {q} names no parameter", lines, 3) == 9
    assert message_line("no implementation: give one of run", lines, 3) == 3


# -- option injection: a model's "-x" values ----------------------------------------------

OPT = {"pattern": {"type": "string"}}


def model_ctx(tmp_path):
    return ctx(workdir=str(tmp_path), caller="model")


@pytest.mark.parametrize(
    "spec",
    [
        {"run": [PY, "-c", "import sys; print(sys.argv[1:])", "{pattern}"]},
        {"shell": f"{shlex.quote(PY)} -c 'import sys; print(sys.argv[1:])' {{pattern}}"},
    ],
)
def test_model_option_values_are_refused_and_person_values_taken_as_meant(spec, tmp_path):
    run = make_handler(spec, name="t", params=OPT, base_dir=".")
    refused = run({"pattern": "-rf"}, model_ctx(tmp_path))
    assert "'pattern' starts with '-'" in refused["error"] and refused["param"] == "pattern"
    assert "option: true" in refused["error"] and "stdout" not in refused
    assert run({"pattern": "x-y"}, model_ctx(tmp_path))["stdout"] == "['x-y']\n"
    assert run({"pattern": "-rf"}, ctx(workdir=str(tmp_path)))["stdout"] == "['-rf']\n"
    opted = make_handler(spec, name="t", params={"pattern": {"option": True}}, base_dir=".")
    assert opted({"pattern": "-rf"}, model_ctx(tmp_path))["stdout"] == "['-rf']\n"
    listed = make_handler({**spec, "options": ["pattern"]}, name="t", params=OPT, base_dir=".")
    assert listed({"pattern": "-rf"}, model_ctx(tmp_path))["stdout"] == "['-rf']\n"


def test_dashes_in_the_template_let_a_model_value_start_with_a_dash(tmp_path):
    argv = make_handler(
        {"run": [PY, "-c", "import sys; print(sys.argv[1:])", "--", "{pattern}"]},
        name="t",
        params=OPT,
        base_dir=".",
    )
    assert argv({"pattern": "-rf"}, model_ctx(tmp_path))["stdout"] == "['--', '-rf']\n"
    shell = make_handler({"shell": "printf '%s' -- {pattern}"}, name="t", params=OPT, base_dir=".")
    assert shell({"pattern": "-rf"}, model_ctx(tmp_path))["stdout"] == "---rf"


def test_composing_exec_refuses_a_model_option_value(tmp_path):
    from mdagent.tools.builtins import register_builtins

    box = Toolbox()
    register_builtins(box, names=["exec"])
    declared(box, "find", {"tool": "exec", "with": {"command": "grep {pattern} f"}}, OPT)
    (tmp_path / "f").write_text("-rf\n")
    refused = box.run("find", {"pattern": "-rf"}, model_ctx(tmp_path))
    assert not refused.ok and "'pattern' starts with '-'" in refused.error
    typed = box.run("find", {"pattern": "-e-rf"}, ctx(workdir=str(tmp_path)))
    assert typed.ok and typed.data["stdout"] == "-rf\n"
