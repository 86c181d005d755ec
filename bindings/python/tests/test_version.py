"""The package's version: the Rust workspace's, in the module and in the installed metadata."""

import importlib.metadata
import pathlib
import re
import tomllib

import tenure


def test_the_version_is_the_workspace_version() -> None:
    workspace = pathlib.Path(__file__).resolve().parents[3] / "Cargo.toml"
    expected = tomllib.loads(workspace.read_text())["workspace"]["package"]["version"]
    assert tenure.__version__ == expected


def test_the_installed_metadata_carries_the_same_version() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+([-.+][0-9A-Za-z.-]+)?", tenure.__version__)
    assert importlib.metadata.version("tenure") == tenure.__version__
