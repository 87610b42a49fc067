"""What a rollout's rules would do, the engine's own `decide` on a simulated clock: before it runs
(`modelgate plan`) or over recorded metrics (`modelgate replay`)."""
