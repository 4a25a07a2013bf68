"""The bundled demo: a deterministic, instrumented support agent (no network, no API key).

A Pydantic AI agent driven by a `FunctionModel` that follows a fixed script per request; it is run
under `capture()` for each case and graded from its spans. One check is meant to fail, to show
what a failure's reason looks like.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic_ai import Agent, InstrumentationSettings, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from .capture import Capture, capture
from .evaluators import (
    ArgumentCorrectness,
    ContainsEvaluator,
    HasMatchingSpan,
    MaxModelRequests,
    MaxToolCalls,
    ToolCorrectness,
    TrajectoryMatch,
)
from .grading import grade
from .results import EvalResult

__all__ = ["CASES", "DemoCase", "build_agent", "run_demo"]

ORDERS = {"12345": 40.0, "777": 12.5, "999": 250.0}
REFUND_LIMIT = 100.0


def _script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """What a careful support model would do, step by step, decided from the conversation so far."""
    prompt = str(messages[0].parts[-1].content)  # type: ignore[union-attr]
    order = re.search(r"\d+", prompt)
    order_id = order.group() if order else "0"
    returns = [
        p for m in messages for p in m.parts if isinstance(p, ToolReturnPart) and getattr(p, "outcome", "") != "retried"
    ]
    done = {p.tool_name for p in returns}
    step = sum(isinstance(m, ModelResponse) for m in messages)
    if "lookup_order" not in done:
        return ModelResponse(parts=[ToolCallPart("lookup_order", {"order_id": order_id}, tool_call_id=f"c{step}")])
    wants_refund = "refund" in prompt.lower()
    if wants_refund and "issue_refund" not in done:
        # the first attempt asks for the full amount; the tool refuses above the limit and the model retries
        amount = ORDERS.get(order_id, 0.0)
        if any("refund limit" in str(getattr(p, "content", "")) for m in messages for p in m.parts):
            amount = REFUND_LIMIT
        return ModelResponse(
            parts=[ToolCallPart("issue_refund", {"order_id": order_id, "amount": amount}, tool_call_id=f"c{step}")]
        )
    if "email" in prompt.lower() and "send_email" not in done:
        body = f"Your refund for order {order_id} is on its way."
        return ModelResponse(
            parts=[ToolCallPart("send_email", {"to": "customer@example.com", "body": body}, tool_call_id=f"c{step}")]
        )
    status = next((str(p.content) for p in returns if p.tool_name == "lookup_order"), "")
    if wants_refund:
        refund = next((str(p.content) for p in returns if p.tool_name == "issue_refund"), "")
        return ModelResponse(parts=[TextPart(f"Done: {refund}. {status}")])
    return ModelResponse(parts=[TextPart(f"Order {order_id}: {status}")])


def build_agent() -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(_script, model_name="support-script"), name="support")
    agent.instrument = InstrumentationSettings(include_content=True)

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        """Look up an order's status."""
        if order_id not in ORDERS:
            return f"no order {order_id}"
        return f"order {order_id} shipped, total ${ORDERS[order_id]:.2f}"

    @agent.tool_plain
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund an order, at most $100 without a manager."""
        if amount > REFUND_LIMIT:
            raise ModelRetry(f"amount {amount} is over the refund limit of {REFUND_LIMIT}")
        return f"refunded ${amount:.2f} on order {order_id}"

    @agent.tool_plain
    def send_email(to: str, body: str) -> str:
        """Email the customer."""
        return f"sent to {to}"

    return agent


@dataclass
class DemoCase:
    name: str
    prompt: str
    evaluators: list[object] = field(default_factory=list)


CASES = [
    DemoCase(
        "order status",
        "Where is my order 777?",
        [
            ToolCorrectness(expected_tools=["lookup_order"]),
            ArgumentCorrectness(tool_name="lookup_order", expected_arguments={"order_id": "777"}),
            ContainsEvaluator(any_of=["shipped"]),
            MaxModelRequests(max_requests=2),
        ],
    ),
    DemoCase(
        "refund",
        "Please refund order 12345",
        [
            TrajectoryMatch(expected_trajectory=["lookup_order", "issue_refund"], order="exact"),
            ArgumentCorrectness(tool_name="issue_refund", expected_arguments={"order_id": "12345", "amount": 40.0}),
            HasMatchingSpan(query={"name_equals": "invoke_agent support", "max_duration": 5.0}),
        ],
    ),
    DemoCase(
        "refund over the limit, then email",
        "Refund order 999 and email me a confirmation",
        [
            TrajectoryMatch(expected_trajectory=["lookup_order", "issue_refund", "send_email"]),
            ArgumentCorrectness(tool_name="issue_refund", expected_arguments={"amount": 100.0}),
            MaxModelRequests(max_requests=5),
            # meant to fail: the rejected first refund attempt also counts against the budget
            MaxToolCalls(max_calls=3),
        ],
    ),
]


def run_case(agent: Agent[None, str], case: DemoCase) -> tuple[Capture, str, list[EvalResult]]:
    with capture() as cap:
        reply = agent.run_sync(case.prompt).output
    return cap, reply, grade(cap, case.evaluators)


def run_demo() -> list[tuple[DemoCase, Capture, str, list[EvalResult]]]:
    agent = build_agent()
    return [(case, *run_case(agent, case)) for case in CASES]
