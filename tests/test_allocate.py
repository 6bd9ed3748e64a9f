"""The allocator of ports and Redis databases (tests/allocate.py): a name is claimed once, a
pool that runs out says so, and no test numbers a port or a database by hand."""

from __future__ import annotations

import re

import pytest

from tests.allocate import AllocationError, Allocator
from tests.conftest import ALLOC, REPO, TEST_ENV


def fresh(databases: int = 3) -> Allocator:
    return Allocator(500, {"web": range(8010, 8012), "other": range(8050, 8051)}, 6900,
                     databases)


def test_names_get_the_next_free_resource_moved_by_the_offset() -> None:
    a = fresh()
    assert (a.port("one"), a.port("two"), a.port("three", pool="other")) == (8510, 8511, 8550)
    assert (a.redis_url("one"), a.redis_db("two")) == ("redis://127.0.0.1:6900/0", 1)
    assert a.fixed_port("model server", 8091) == 8591
    assert [c.name for c in a.claims()] == ["one", "two", "three", "model server", "one", "two"]
    table = a.table()
    assert "redis db     1  redis  two" in table and "test_allocate.py:" in table


def test_a_name_claimed_twice_is_refused_naming_both_claims() -> None:
    a = fresh()
    a.port("scripted_stack")
    a.redis_db("scripted_stack")  # a port and a database: two kinds, one holder
    with pytest.raises(AllocationError, match=r"port 'scripted_stack' claimed twice: "
                                              r"test_allocate\.py:\d+ has 8510, "
                                              r"test_allocate\.py:\d+ asked again"):
        a.port("scripted_stack", pool="other")
    with pytest.raises(AllocationError, match="redis db 'scripted_stack' claimed twice"):
        a.redis_url("scripted_stack")


def test_running_out_is_an_error_with_the_table_of_holders() -> None:
    a = fresh(databases=1)
    a.port("a"), a.port("b"), a.redis_db("x")
    with pytest.raises(AllocationError, match=r"(?s)pool 'web' \(8510-8511\) has run out at "
                                              r"'c'.*\ba\b.*\bb\b"):
        a.port("c")
    with pytest.raises(AllocationError, match="has 1 databases, all taken, at 'y'"):
        a.redis_db("y")
    with pytest.raises(AllocationError, match="no port pool 'redis'"):
        a.port("d", pool="redis")


def test_pools_that_overlap_are_refused() -> None:
    with pytest.raises(AllocationError, match="'web' and 'other' overlap"):
        Allocator(0, {"web": range(8010, 8050), "other": range(8049, 8090)}, 6400, 16)


def test_a_fixed_port_is_outside_the_pools_and_held_once() -> None:
    a = fresh()
    with pytest.raises(AllocationError, match="is in the pool 'web'"):
        a.fixed_port("inside", 8010)
    a.fixed_port("postgresql", 5434)
    with pytest.raises(AllocationError, match="already 'postgresql'"):
        a.fixed_port("another", 5434)


def test_the_sessions_allowed_origins_are_the_web_pool(alloc: Allocator) -> None:
    assert alloc is ALLOC
    origins = set(TEST_ENV["ASSISTANT_ALLOWED_ORIGINS"].split(","))
    assert {f"http://127.0.0.1:{p}" for p in alloc.pools["web"]} <= origins
    other = alloc.pools["other"]
    assert not any(f":{p}" in o for p in other for o in origins)


# What numbering by hand looked like: a port or database picked in the test file.
BY_HAND = re.compile(r"\bport\(\d|redis_url\(\d|WEB_PORT\s*\+|Redis\(port=\d")


def test_no_test_numbers_a_port_or_a_redis_database_by_hand() -> None:
    found = []
    for path in sorted((REPO / "tests").glob("*.py")):
        if path.name in ("conftest.py", "allocate.py", "test_allocate.py"):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if BY_HAND.search(line):
                found.append(f"{path.name}:{n}: {line.strip()}")
    assert not found, "claim it from ALLOC (tests/allocate.py) instead:\n" + "\n".join(found)


def test_a_port_something_already_listens_on_is_skipped() -> None:
    """A `make run` stack beside the suite listens inside the web pool (its demo app on 8030):
    handing that port to a test's server failed with "Address already in use"."""
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        a = Allocator(0, {"web": range(taken, taken + 3)}, 6900, 1)
        got = a.port("host page")
        assert got != taken and got in range(taken + 1, taken + 3)
