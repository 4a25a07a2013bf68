#!/usr/bin/env bash
# Run pytest-agent-eval's own test suite against tracegrade with only the import renamed.
#
#   scripts/pae_compat.sh [--names] [PAE_SOURCE_DIR] [-- extra pytest args]
#
# PAE_SOURCE_DIR is an unpacked pytest-agent-eval sdist (default: $PAE_SRC, else the 0.3.0 sdist is
# fetched from PyPI with `pip download`). The sdist without its package (src/) is copied to a
# temporary directory, every `pytest_agent_eval` becomes `tracegrade`, and the suite runs with this
# repository's virtualenv ($VENV, default .venv), where pytest-agent-eval itself is not installed.
#
# Its public module paths (`.models`, `.yaml_loader`, `.runner`, `.adapters.<framework>`,
# `.evaluators.<x>`) exist in tracegrade as they are. --names also maps the modules of its plugin
# that tracegrade keeps elsewhere (`.adapters._args` and `.adapters.pydantic_ai`'s private helpers →
# `tracegrade.pytest_plugin.adapters`; `.groups`, `.config`, `.report` → `tracegrade.pytest_plugin.<same>`),
# to check behaviour past the module layout.
#
# Its contract tests build real openai / langchain-core / smolagents objects; where those are not
# installed, point PYTHONPATH at a directory holding them (`pip install --target DIR ...`).
#
# Prints one line per test (outcome, node id, first line of the cause) and a count; the full
# output is in $OUT (default: a temporary directory, printed at the end). Exit status: pytest's.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$repo/.venv}
version=${PAE_VERSION:-0.3.0}
names=0
src=${PAE_SRC:-}
extra=()
while (($#)); do
    case $1 in
        --names) names=1 ;;
        --) shift; extra=("$@"); break ;;
        *) src=$1 ;;
    esac
    shift
done

work=$(mktemp -d "${TMPDIR:-/tmp}/pae-compat.XXXXXX")
out=${OUT:-$work/out}
mkdir -p "$out"

if [[ -z $src ]]; then
    "$venv/bin/python" -m pip download -q --no-binary :all: --no-deps "pytest-agent-eval==$version" -d "$work/sdist"
    tar -xzf "$work"/sdist/pytest_agent_eval-*.tar.gz -C "$work/sdist"
    src=$(echo "$work"/sdist/pytest_agent_eval-*/)
fi
[[ -d $src/tests ]] || { echo "no tests/ under $src" >&2; exit 2; }

suite=$work/suite
cp -r "$src" "$suite"
rm -rf "$suite/src" "$suite/.github"  # its package is not what runs: tracegrade is
# only the pytest settings of its pyproject.toml: its [project] table names a package that is not here
"$venv/bin/python" - "$suite/pyproject.toml" <<'PY'
import sys, tomllib
path = sys.argv[1]
with open(path, "rb") as f:
    ini = tomllib.load(f).get("tool", {}).get("pytest", {}).get("ini_options", {})
lines = ["[tool.pytest.ini_options]"]
for key, value in ini.items():
    lines.append(f"{key} = {value!r}".replace("'", '"'))
open(path, "w").write("\n".join(lines) + "\n")
PY

grep -rlZ --include='*.py' --include='*.yaml' --include='*.yml' --include='*.toml' --include='*.md' \
    pytest_agent_eval "$suite" | xargs -0 -r sed -i 's/pytest_agent_eval/tracegrade/g'
if ((names)); then
    # the plugin's own modules → tracegrade.pytest_plugin (the public paths are left as they are)
    grep -rlZ --include='*.py' --include='*.md' 'tracegrade\.' "$suite" | xargs -0 -r sed -i -E \
        -e 's/from tracegrade\.adapters\._args import/from tracegrade.pytest_plugin.adapters import/g' \
        -e 's/from tracegrade\.adapters\.[a-z_]+ import (_[a-z_]+)$/from tracegrade.pytest_plugin.adapters import \1/g' \
        -e 's/tracegrade\.(groups|config|report)\b/tracegrade.pytest_plugin.\1/g'
fi

cd "$suite"
set +e
# --continue-on-collection-errors: a test module that imports one of its private modules fails to
# collect; the other modules still run
"$venv/bin/python" -m pytest -p no:cacheprovider -q -rA --tb=line --continue-on-collection-errors --junitxml="$out/junit.xml" "${extra[@]}" \
    >"$out/pytest.log" 2>&1
status=$?
set -e

"$venv/bin/python" - "$out/junit.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET

counts: dict[str, int] = {}
for case in ET.parse(sys.argv[1]).iter("testcase"):
    module, name = case.get("classname", ""), case.get("name", "")
    node = f"{module.replace('.', '/')}.py::{name}" if module else f"{name.replace('.', '/')}.py (collection)"
    outcome, cause = "passed", ""
    for child in case:
        if child.tag in ("failure", "error", "skipped"):
            outcome = {"failure": "failed"}.get(child.tag, child.tag)
            text = (child.get("message") or child.text or "").strip()
            cause = text.splitlines()[0][:160] if text else ""
            break
    counts[outcome] = counts.get(outcome, 0) + 1
    print(f"{outcome.upper():7} {node}" + (f"  -- {cause}" if cause else ""))
print(", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
PY
echo "full output: $out/pytest.log (suite copy: $suite)"
exit $status
