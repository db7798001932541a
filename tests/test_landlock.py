"""The Landlock layer's decisions in this process: who holds capabilities, refused rules.

What a ruleset confines is tested with real children in tests/test_sandbox.py.
"""

from __future__ import annotations

import builtins
import errno
import os
from pathlib import Path

import pytest

from mdagent.safety import landlock

ZERO = "0000000000000000"


@pytest.fixture
def status(tmp_path, monkeypatch):
    """Stand in for /proc/self/status: call with its text (None: unreadable)."""
    real_open = builtins.open
    fake = tmp_path / "status"

    def fake_open(file, *args, **kw):
        if file == "/proc/self/status":
            if not fake.exists():
                raise PermissionError(errno.EACCES, "Permission denied", file)
            return real_open(fake, *args, **kw)
        return real_open(file, *args, **kw)

    monkeypatch.setattr(builtins, "open", fake_open)

    def set_text(text: str | None) -> None:
        if text is not None:
            fake.write_text(text, encoding="ascii")

    return set_text


def status_text(prm: str = ZERO, eff: str = ZERO, amb: str = ZERO) -> str:
    return (
        f"Name:\tagent\nUid:\t1000\t1000\t1000\t1000\nCapInh:\t{ZERO}\nCapPrm:\t{prm}\n"
        f"CapEff:\t{eff}\nCapBnd:\t000001ffffffffff\nCapAmb:\t{amb}\nNoNewPrivs:\t0\n"
    )


@pytest.mark.parametrize(
    ("text", "held"),
    [
        (status_text(), False),  # a user without capabilities: nothing to drop
        (status_text(prm="0000000000000400"), True),
        (status_text(eff="0000000000000400"), True),
        (status_text(amb="0000000000000400"), True),
        (status_text(prm="000001ffffffffff", eff="000001ffffffffff"), True),  # root
        (None, True),  # unreadable: assume it does (fail closed)
        ("CapPrm:\tnot-hex\n", True),
    ],
)
def test_has_capabilities_reads_permitted_effective_and_ambient(status, text, held):
    status(text)
    assert landlock.has_capabilities() is held


def test_a_process_name_that_is_not_ascii_does_not_count_as_capabilities(status, tmp_path):
    # The kernel writes the process name as it is (`agënt`, or any bytes): only the
    # Cap lines decide, so a user without capabilities is not taken for root.
    status(status_text())
    fake = tmp_path / "status"
    fake.write_bytes(fake.read_bytes().replace(b"Name:\tagent", b"Name:\tag\xc3\xabnt\xff"))
    assert landlock.has_capabilities() is False


@pytest.mark.skipif(bool(landlock.landlock_reason()), reason="no Landlock here")
def test_a_rule_the_kernel_refuses_is_an_oserror_with_its_errno():
    # A namespace file lives on an internal filesystem: Landlock refuses a rule for it.
    with pytest.raises(OSError) as caught:
        landlock.create_ruleset(
            landlock.abi_version(), [Path("/proc/self/ns/net")], close_tcp=False
        )
    assert caught.value.errno == errno.EBADFD
    assert caught.value.strerror == os.strerror(errno.EBADFD)
