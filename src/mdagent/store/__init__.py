"""The SQLite store of sessions and the audit log."""
