"""The bundled ``wc`` tool: what ``wc`` prints, as a dict a model can read."""


def run(args, ctx):
    """Count lines, words and bytes of ``args["path"]`` inside the workspace."""
    from mdagent.core.errors import PolicyDenied
    from mdagent.safety.workspace import confine_for

    try:
        path = confine_for(ctx, args["path"])  # the workspace and policy.paths roots
    except PolicyDenied as err:
        return {"error": str(err), "code": "DENIED"}
    if not path.is_file():
        return {"error": f"not found: {args['path']}"}
    data = path.read_bytes()
    lines, words = data.count(b"\n"), len(data.split())
    return {
        "path": args["path"],
        "lines": lines,
        "words": words,
        "bytes": len(data),
        "output": f"{lines:>7} {words:>7} {len(data):>7} {args['path']}",
    }
