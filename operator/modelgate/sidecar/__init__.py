"""The refusal proxy: a sidecar in front of an OpenAI-compatible model server that counts requests
and refused answers per pod (`modelgate refusal-proxy`, docs/refusal-sidecar.md).

`answers` is pure (what an answer is and whether it is a refusal); `proxy` does the I/O."""
