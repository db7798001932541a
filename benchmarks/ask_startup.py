"""How soon ``agent ask`` puts its first request byte on the wire (issue 33, item 6).

Run by hand: ``python benchmarks/ask_startup.py [--agent PATH] [--runs N]``.
A TCP server on 127.0.0.1 notes when the first byte of each connection
arrives (for ``https://`` that is the TLS ClientHello: certificates are
loaded before it) and hangs up; the figure is that moment minus the moment
``agent ask`` was started, the median of ``--runs`` runs, beside ``python -c
pass`` (target: within 8x of it, for ``http://`` and ``https://`` alike).
``--agent`` defaults to the ``agent`` beside this Python: an editable
install's import hook adds a few ms; ``benchmarks/startup.py`` makes a
regular install for the other start-up figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


class FirstByte:
    """Accepts connections on 127.0.0.1; records when each one's first byte came, then closes."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.times: list[float] = []
        self.arrived = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                if conn.recv(1):
                    self.times.append(time.perf_counter())
                    self.arrived.set()

    def close(self) -> None:
        self.sock.close()


def run_once(command: list[str], server: FirstByte, env: dict[str, str], cwd: str) -> float:
    server.arrived.clear()
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    if not server.arrived.wait(30):
        proc.kill()
        raise SystemExit(f"no request from {command}")
    took = server.times[-1] - start
    proc.wait()
    return took


def floor(runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = Path(sys.executable).with_name("agent")
    parser.add_argument("--agent", default=str(default), help="the agent executable")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    agent = shutil.which(args.agent) or args.agent
    with tempfile.TemporaryDirectory() as root:
        ws = Path(root, "ws")
        (ws / ".agents").mkdir(parents=True)
        env = dict(
            os.environ,
            AGENT_HOME=str(Path(root, "home")),
            AGENT_STATE_DIR=str(Path(root, "state")),
            HOME=root,
            OPENAI_API_KEY="sk-benchmark",
        )
        server = FirstByte()
        commands = {
            scheme: [
                agent, "--provider", "openai",
                "--base-url", f"{scheme}://127.0.0.1:{server.port}/v1", "ask", "hi",
            ]
            for scheme in ("http", "https")
        }  # fmt: skip
        for command in commands.values():
            run_once(command, server, env, str(ws))  # warm the registry cache
        times: dict[str, list[float]] = {"floor": [], "http": [], "https": []}
        for _ in range(args.runs):  # interleaved: a busy machine slows all alike
            times["floor"].append(floor(1))
            for scheme, command in commands.items():
                times[scheme].append(run_once(command, server, env, str(ws)))
        server.close()
        base = statistics.median(times["floor"])
        rows = [("python -c pass", base)]
        for scheme in ("http", "https"):
            rows.append((f"agent ask, first byte to {scheme}://", statistics.median(times[scheme])))
    for name, seconds in rows:
        print(f"{name:<40} {seconds * 1000:7.1f} ms  {seconds / base:5.1f}x python -c pass")
    worst = max(seconds for _, seconds in rows[1:])
    print(f"target: within 8x python -c pass: {'met' if worst <= 8 * base else 'NOT met'}")


if __name__ == "__main__":
    main()
