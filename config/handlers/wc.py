"""The bundled ``wc`` tool: what ``wc`` prints, as a dict a model can read."""

from pathlib import Path


def run(args, ctx):
    """Count lines, words and bytes of ``args["path"]`` inside the workspace."""
    from mdagent.workspace import confine

    try:
        path = confine(args["path"], ctx.workdir or ".")
    except Exception as err:  # PolicyDenied: say why, as data
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
