"""`modelgate report`: a rollout's timeline as data, drawn as one HTML page and a PNG (`modelgate
replay` draws the timeline it simulates with the same pieces)."""
