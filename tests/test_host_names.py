"""Hostname facts with an injected resolver (the real resolver is never used here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from host_fakes import fake_resolver, write
from syncdoctor.host.names import is_loopback_address, read_names


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1", True),
        ("127.0.1.1", True),
        ("::1", True),
        ("10.0.0.7", False),
        ("fe80::1%eth0", False),
        ("not-an-ip", False),
        ("", False),
    ],
)
def test_is_loopback_address(address: str, expected: bool) -> None:
    assert is_loopback_address(address) is expected


def test_hostname_resolving_to_debian_loopback(tmp_path: Path) -> None:
    write(tmp_path / "proc" / "sys" / "kernel" / "hostname", "node7")
    names = read_names(tmp_path, fake_resolver({"node7": ["127.0.1.1"]}))
    assert names.hostname == "node7" and names.resolved == ("127.0.1.1",) and names.resolve_error is None
    assert names.fqdn == "node7"


def test_unresolvable_hostname(tmp_path: Path) -> None:
    write(tmp_path / "proc" / "sys" / "kernel" / "hostname", "ghost")
    names = read_names(tmp_path, fake_resolver({}))
    assert names.hostname == "ghost" and names.resolved == () and "not known" in (names.resolve_error or "")


def test_missing_hostname_file_under_fake_root(tmp_path: Path) -> None:
    names = read_names(tmp_path, fake_resolver({}))
    assert names.hostname is None and names.resolve_error == "hostname unreadable"


def test_resolver_raising_unicode_error(tmp_path: Path) -> None:
    write(tmp_path / "proc" / "sys" / "kernel" / "hostname", "bad")

    def resolver(_host: str):
        raise UnicodeError("label too long")

    assert read_names(tmp_path, resolver).resolve_error == "label too long"
