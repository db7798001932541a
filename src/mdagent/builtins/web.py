"""The ``fetch`` built-in: HTTP GET with httpx, capped in size and time."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from mdagent.builtins import setting

DEFAULT_TIMEOUT = 30
DEFAULT_MAX_BYTES = 1_000_000
MAX_REDIRECTS = 10
_TEXT_TYPES = ("text/", "json", "xml", "javascript", "yaml", "csv", "x-www-form-urlencoded")


def fetch(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """GET ``url`` (redirects followed, each one judged by the policy) and return its body as text.

    The body is read as a stream and cut at ``fetch.max_bytes`` (the result
    says ``truncated``); a non-2xx status is a failure that still carries
    the body. A redirect is followed only to http(s) URLs the policy would
    let this call fetch directly, at most :data:`MAX_REDIRECTS` times.
    """
    url = str(args["url"]).strip()
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return {"error": f"only http:// and https:// URLs can be fetched: {url}"}
    timeout = float(setting(ctx, "fetch", "timeout", DEFAULT_TIMEOUT))
    max_bytes = int(setting(ctx, "fetch", "max_bytes", DEFAULT_MAX_BYTES))

    import httpx  # costs ~100 ms: only for the calls that fetch

    body = bytearray()
    truncated = False
    current = url
    try:
        # Redirects by hand: httpx would follow them to any host, past the
        # domain rules that were checked only against the first URL.
        with httpx.Client(follow_redirects=False, timeout=timeout) as client:
            for _ in range(MAX_REDIRECTS + 1):
                with client.stream("GET", current, headers={"User-Agent": "mdagent"}) as response:
                    if response.next_request is not None:
                        target = str(response.next_request.url)
                        refused = _redirect_refused(current, target, ctx)
                        if refused is not None:
                            return refused
                        current = target
                        continue
                    for chunk in response.iter_bytes():
                        room = max_bytes - len(body)
                        if len(chunk) > room:
                            body += chunk[:room]
                            truncated = True
                            break
                        body += chunk
                    status = response.status_code
                    final_url = str(response.url)
                    content_type = response.headers.get("content-type", "")
                    encoding = response.charset_encoding or "utf-8"
                    break
            else:
                return {"error": f"too many redirects (more than {MAX_REDIRECTS})", "url": url}
    except httpx.TimeoutException:
        return {"error": f"timed out after {timeout:g} s", "url": url, "timed_out": True}
    except httpx.HTTPError as exc:
        return {"error": f"fetch failed: {exc or type(exc).__name__}", "url": url}

    result: dict[str, Any] = {
        "url": final_url,
        "status": status,
        "content_type": content_type,
        "output": _as_text(bytes(body), content_type, encoding),
        "bytes": len(body),
        "truncated": truncated,
    }
    if not 200 <= status < 300:
        result["error"] = f"HTTP {status}"
    return result


def _redirect_refused(url: str, target: str, ctx: Any) -> dict[str, Any] | None:
    """The failure for a redirect from ``url`` to ``target`` the call may not follow, or None.

    ``target`` is judged as if the call had asked for it: by ``ctx.policy``,
    else the toolbox's (no policy: only the scheme is checked).
    """

    def refused(reason: str, **extra: Any) -> dict[str, Any]:
        return {"error": f"redirect to {target} refused: {reason}", **extra, "url": url}

    if urlsplit(target).scheme.lower() not in ("http", "https"):
        return refused("only http:// and https:// URLs can be fetched")
    toolbox = getattr(ctx, "toolbox", None)
    policy = getattr(ctx, "policy", None)
    if policy is None and toolbox is not None:
        policy = toolbox.policy
    if policy is None:
        return None
    if toolbox is None:
        return refused("no toolbox to check the policy against", code="DENIED")
    decision = policy.check(toolbox.tool_for("fetch"), {"url": target}, ctx)
    if decision.allowed:
        return None
    return refused(decision.reason or "denied by policy", code=decision.code, **decision.extra)


def _as_text(body: bytes, content_type: str, encoding: str) -> str:
    """The body as text; a binary body is described, not dumped."""
    kind = content_type.split(";", 1)[0].strip().lower()
    looks_text = not kind or any(t in kind for t in _TEXT_TYPES)
    if not looks_text and b"\0" in body[:8192]:
        return f"(binary content: {kind or 'unknown type'}, {len(body)} bytes)"
    try:
        return body.decode(encoding, "replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", "replace")
