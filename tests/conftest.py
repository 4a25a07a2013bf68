"""Options shared by the whole suite."""

from __future__ import annotations

import pytest

# pytester's in-process runs restore sys.modules afterwards, dropping the modules first imported
# inside them, while `tracegrade`'s lazy attributes keep the classes of the first import: a later run
# would then re-import `Turn` and see two classes of that name. Importing the plugin's session
# modules here, before any pytester run, keeps one copy (a test file run alone behaves as in the suite).
import tracegrade.pytest_plugin.session
import tracegrade.pytest_plugin.transcript  # noqa: F401


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
