"""`modelgate eval`: the built-in gate check (docs/gate-eval.md). It asks the candidate and the
incumbent the items of a test set and replayed production requests, and a judge which answer of each
pair is better, and writes a GateResult (api/gate_result.py).

Pure parts (checks, testset, replay, streaming, judge, scoring, summary) are separate from the I/O
(client, runner): lint-imports keeps the pure ones free of the HTTP client."""
