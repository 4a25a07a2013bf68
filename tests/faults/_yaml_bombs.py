"""YAML alias bombs ("billion laughs"): a few hundred bytes naming `width ** levels` nodes, placed in
each part of a grading spec and of a transcript. The anchors sit inside the value that uses them, so
every document is otherwise valid up to that value."""

from __future__ import annotations


def ladder(levels: int = 9, width: int = 9) -> str:
    """A flow sequence whose last item (`*l{levels-1}`'s anchor) expands to `width ** levels` scalars."""
    items = ["&l0 [" + ",".join(["x"] * width) + "]"]
    items += [f"&l{i} [" + ",".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "[" + ", ".join(items) + "]"


def map_ladder(levels: int = 9, width: int = 9) -> str:
    """The same with mappings (`k0..k{width-1}`), for merge keys."""
    items = ["&m0 {" + ", ".join(f"k{j}: x" for j in range(width)) + "}"]
    items += [f"&m{i} {{" + ", ".join(f"k{j}: *m{i - 1}" for j in range(width)) + "}" for i in range(1, levels)]
    return "[" + ", ".join(items) + "]"


def spec_bombs(levels: int = 9, width: int = 9) -> dict[str, str]:
    b, m, top = ladder(levels, width), map_ladder(levels, width), f"*m{levels - 1}"
    return {
        "evaluators_item": f"evaluators:\n  - MaxToolCalls: 1\n  - {b}\n",
        "evaluator_args": f"evaluators:\n  - ToolCorrectness: {{expected_tools: {b}}}\n",
        "positional_arg": f"evaluators:\n  - MaxToolCalls: {b}\n",
        "query_args": f"evaluators:\n  - HasMatchingSpan: {{query: {{has_attributes: {{a: {b}}}}}}}\n",
        "top_level_key": f"evaluators: [MaxToolCalls: 1]\nextra: {b}\n",
        "mapping_key": f"evaluators:\n  - ToolCorrectness: {{expected_tools: [a], ? {{k: {b}}} : 1}}\n",
        "merge_key": f"evaluators:\n  - ToolCorrectness:\n      defs: {m}\n      <<: {top}\n",
    }


def transcript_bombs(levels: int = 9, width: int = 9) -> dict[str, str]:
    b, m, top = ladder(levels, width), map_ladder(levels, width), f"*m{levels - 1}"
    return {
        "top_level": f"id: t\nturns: [{{user: hi}}]\nextra: {b}\n",
        "turns": f"id: t\nturns: {b}\n",
        "user": f"id: t\nturns: [{{user: {b}}}]\n",
        "tags": f"id: t\ntags: {b}\nturns: [{{user: hi}}]\n",
        "expect_args": f"id: t\nturns:\n  - user: hi\n    expect: {{tool_calls_args: [{{tool: a, args: {{q: {b}}}}}]}}\n",
        "evaluator_args": (
            f"id: t\nturns:\n  - user: hi\n    expect: {{evaluators: [{{ToolCorrectness: {{expected_tools: {b}}}}}]}}\n"
        ),
        "mapping_key": f"id: t\nturns:\n  - user: hi\n    expect: {{spans: [{{? {{k: {b}}} : 1}}]}}\n",
        "merge_key": f"id: t\ndefs: {m}\nturns:\n  - user: hi\n    expect:\n      <<: {top}\n",
    }
