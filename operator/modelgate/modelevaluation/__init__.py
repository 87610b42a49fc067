"""The ModelEvaluation: its pure engine (engine/), the controller tick that applies its decisions
(reconciler.py) and its shape for the controller runtime (loops.py)."""
