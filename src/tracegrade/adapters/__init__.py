"""pytest-agent-eval's `pytest_agent_eval.adapters.<framework>` import paths, so that its users switch
with one import change: `tracegrade.adapters.pydantic_ai.PydanticAIAdapter`, `.openai.OpenAIAdapter`,
`.langchain.LangChainAdapter`, `.smolagents.SmolagentsAdapter`. The adapters' home is
`tracegrade.pytest_plugin.adapters`.
"""
