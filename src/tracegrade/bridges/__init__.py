"""Integrations with other evaluation frameworks.

- `tracegrade.bridges.pydantic_evals`: tracegrade evaluators as `pydantic_evals` `Evaluator`s, and
  conversions between pydantic-evals' `SpanTree` and tracegrade's.

Each bridge is imported on its own (nothing is imported here), so using tracegrade never imports a
framework you do not use.
"""
