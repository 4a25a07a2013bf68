"""Options shared by the whole suite."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--faults-full",
        action="store_true",
        default=False,
        help="run the fault suite (tests/faults) at full scale; by default it runs a small scale fit for CI",
    )


@pytest.fixture(scope="session")
def fault_scale(request: pytest.FixtureRequest) -> str:
    """`"full"` under `--faults-full`, else `"ci"`: fault tests size their inputs by it."""
    return "full" if request.config.getoption("--faults-full") else "ci"
