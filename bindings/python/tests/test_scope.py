"""Backend scopes (grelmicro 0.44): `Coordination(requires=...)` against each backend's `scope`,
under `GREL_ENVIRONMENT` unset, development/test, staging/production and unknown."""

import asyncio
import warnings

import pytest
from dict_backend import DictBackend

from tenure import BackendScopeError, BackendScopeWarning, Coordination, MemoryProvider, SQLiteProvider
from tenure.errors import UnknownEnvironmentWarning

# Runs again on Python 3.14 beside grelmicro (`pytest -m py314`):
# backends written in Python.
pytestmark = pytest.mark.py314


def enter(coordination):
    async def main():
        async with coordination:
            return coordination.lock_backend

    return asyncio.run(main())


def caught(coordination):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        enter(coordination)
    return [(w.category, str(w.message)) for w in seen]


def test_memory_falls_short_of_cluster_with_a_warning_when_the_environment_is_unset(monkeypatch):
    monkeypatch.delenv("GREL_ENVIRONMENT", raising=False)
    seen = caught(Coordination(MemoryProvider()))
    assert [category for category, _ in seen] == [BackendScopeWarning]
    assert seen[0][1].startswith(
        "Coordination('default') requires scope 'cluster', but MemoryProvider reaches only scope 'process'. "
        "Set GREL_ENVIRONMENT"
    )


@pytest.mark.parametrize("environment", ["development", "test", " Test "])
def test_development_and_test_are_silent(monkeypatch, environment):
    monkeypatch.setenv("GREL_ENVIRONMENT", environment)
    assert caught(Coordination(MemoryProvider())) == []


@pytest.mark.parametrize("environment", ["production", "staging", "PRODUCTION"])
def test_production_and_staging_refuse_before_opening_anything(monkeypatch, environment, tmp_path):
    monkeypatch.setenv("GREL_ENVIRONMENT", environment)
    provider = SQLiteProvider(str(tmp_path / "locks.db"))
    with pytest.raises(BackendScopeError) as refused:
        enter(Coordination(provider))
    message = str(refused.value)
    assert "requires scope 'cluster', but SQLiteProvider reaches only scope 'host'" in message
    assert f"in environment '{environment.lower()}'" in message and "Redis or PostgreSQL" in message
    assert isinstance(refused.value, RuntimeError)
    assert provider._backend is None  # never opened


def test_a_required_scope_that_is_met_is_silent_everywhere(monkeypatch, tmp_path):
    for environment in (None, "production"):
        if environment is None:
            monkeypatch.delenv("GREL_ENVIRONMENT", raising=False)
        else:
            monkeypatch.setenv("GREL_ENVIRONMENT", environment)
        assert caught(Coordination(MemoryProvider(), requires="process")) == []
        assert caught(Coordination(SQLiteProvider(str(tmp_path / "locks.db")), requires="host")) == []


def test_a_user_backend_is_judged_by_the_scope_it_declares(monkeypatch):
    monkeypatch.setenv("GREL_ENVIRONMENT", "production")

    class Cluster(DictBackend):
        scope = "cluster"

    class Undeclared(DictBackend):
        scope = None

    assert caught(Coordination(lock=Cluster())) == []
    assert caught(Coordination(lock=Undeclared())) == []  # no scope: not judged, as in grelmicro
    with pytest.raises(BackendScopeError, match="DictBackend reaches only scope 'process'"):
        enter(Coordination(lock=DictBackend()))


def test_an_unknown_environment_warns_twice(monkeypatch):
    monkeypatch.setenv("GREL_ENVIRONMENT", "prod")
    categories = [category for category, _ in caught(Coordination(MemoryProvider()))]
    assert categories == [UnknownEnvironmentWarning, BackendScopeWarning]
