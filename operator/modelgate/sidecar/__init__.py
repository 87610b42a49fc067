"""The refusal proxy: a sidecar that counts requests and refused answers per pod.

The refusal proxy: a sidecar in front of an OpenAI-compatible model server that counts requests
and refused answers per pod (`modelgate refusal-proxy`, docs/refusal-sidecar.md).

What an answer is and whether it is a refusal are pure and shared with the evaluator
(`modelgate.chat_answers`, `modelgate.refusal_classifier`); `proxy` does the I/O."""
