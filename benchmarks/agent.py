"""The agent loop's own overhead per step, against the local scripted model server.

Run by hand: ``python benchmarks/agent.py [TURNS]``. Each turn is two steps: the
model calls a trivial ``safe`` tool, then answers. The same requests are then
sent with a bare httpx client; the difference, per step, is what the loop adds
(building the request, parsing the reply, running the call through the
toolbox, the thread pool, and — in the "stored" row — writing every message to
the SQLite session store). The target is <= 5 ms per step.
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

from mdagent.agent.conversation import Conversation
from mdagent.agent.loop import Agent
from mdagent.agent.prompts import model_tools
from mdagent.providers import ProviderConfig, get_provider
from mdagent.tools.toolbox import Toolbox
from mdagent.ui.display import Display

TESTS = Path(__file__).resolve().parents[1] / "tests"


def scripted_model(request: dict) -> dict:
    """Call ``noop`` after the user speaks, answer after the tool result."""
    last = request["messages"][-1]
    if last.get("role") == "tool" or (
        isinstance(last.get("content"), list)
        and any(b.get("type") == "tool_result" for b in last["content"])
    ):
        return {"text": "Done."}
    return {"tool_calls": [{"name": "noop", "arguments": {"text": "hello"}}]}


def make_box() -> Toolbox:
    box = Toolbox()
    box.add(
        "noop",
        description="Do nothing",
        params={"text": {"type": "string"}},
        required=["text"],
        handler=lambda args: {"echo": args["text"]},
        security="safe",
    )
    return box


def agent_ms_per_step(provider, turns: int, store=None) -> float:
    box = make_box()
    tools = model_tools(box, {})
    display = Display(io.StringIO(), io.StringIO(), spinner=False)
    steps = 0
    start = time.perf_counter()
    for _ in range(turns):
        conversation = (
            Conversation.start(store, cwd="/bench", model="bench")
            if store is not None
            else Conversation()
        )
        agent = Agent(
            provider,
            box,
            system="be brief",
            tools=tools,
            conversation=conversation,
            display=display,
        )
        outcome = agent.run("go")
        assert outcome.answer == "Done.", outcome
        steps += outcome.steps
    return (time.perf_counter() - start) * 1000 / steps


def raw_ms_per_request(url: str, bodies: list[dict], turns: int, stream: bool) -> float:
    import httpx

    with httpx.Client() as client:
        start = time.perf_counter()
        for _ in range(turns):
            for body in bodies:
                with client.stream("POST", url, json=body) as response:
                    if stream:
                        for _line in response.iter_lines():
                            pass
                    else:
                        response.read()
        return (time.perf_counter() - start) * 1000 / (turns * len(bodies))


def measure(stream: bool, turns: int, rounds: int = 5) -> dict[str, float]:
    sys.path.insert(0, str(TESTS))  # the scripted server lives with the tests
    from model_server import ModelServer

    with ModelServer([scripted_model], repeat=True) as server, tempfile.TemporaryDirectory() as tmp:
        from mdagent.store.store import Store

        config = ProviderConfig(
            provider="openai", base_url=server.url, model="bench", stream=stream
        )
        provider = get_provider(config)
        store = Store(Path(tmp) / "bench.db")
        agent_ms_per_step(provider, 5)  # warm up: imports, connections, validators
        agent_ms_per_step(provider, 5, store)
        bodies = [r["json"] for r in server.requests[-2:]]
        url = f"{server.url}/chat/completions"
        raw_ms_per_request(url, bodies, 5, stream)
        best = {"agent": float("inf"), "stored": float("inf"), "raw": float("inf")}
        for _ in range(rounds):
            best["raw"] = min(best["raw"], raw_ms_per_request(url, bodies, turns, stream))
            best["agent"] = min(best["agent"], agent_ms_per_step(provider, turns))
            best["stored"] = min(best["stored"], agent_ms_per_step(provider, turns, store))
        provider.close()
        store.close()
        return best


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    print(f"{turns} turns x 2 steps, best of 5 rounds")
    for stream in (True, False):
        figures = measure(stream, turns)
        mode = "streamed" if stream else "not streamed"
        print(f"\n[{mode}]")
        print(f"raw httpx round trip      : {figures['raw']:6.2f} ms/request")
        print(f"agent loop, in memory     : {figures['agent']:6.2f} ms/step")
        print(f"agent loop, session stored: {figures['stored']:6.2f} ms/step")
        for key, label in (("agent", "in memory"), ("stored", "stored")):
            overhead = figures[key] - figures["raw"]
            print(f"{'overhead, ' + label:<26}: {overhead:6.2f} ms/step (target <= 5)")


if __name__ == "__main__":
    main()
