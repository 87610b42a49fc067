"""Metric providers and presets.

- `context`: validated values allowed inside PromQL (`QueryContext`)
- `template`: `{{ variable }}` substitution in user-written queries
- `presets`: named PromQL queries (`errorRate`, `latencyP99`, `refusalRate`) and the request count
- `provider`: the `MetricProvider` Protocol and `QueryResult`
- `prometheus`: `PrometheusProvider`, the Prometheus HTTP API implementation

Nothing is re-exported here on purpose: importing the pure modules (e.g. from `core`) must not
pull in an HTTP client.
"""
