"""Fault scenarios, one implementation each, sized by their arguments: the short forms run in
`make test` (tests/cluster/test_faults_*.py and test_rollout_prometheus_outage.py), the long forms in
`make bench` (bench/test_faults.py), three times in a row.

Each returns what it measured, for the bench to report. Waits poll with deadlines; the only sleeps
are the faults' own timing (when to kill, how long a component stays down), drawn from a seeded
generator where they are random."""
