"""Durations written as people write them, and whether modelgate takes them: the table that
tests/unit/test_duration_parser.py checks parse_duration against, and
tests/cluster/test_readable_refusals.py the API server's CEL rule against."""

# Each unit at most once, the largest first; fractions allowed; up to a hundred years.
WELL_FORMED = (
    "0s",
    "30s",
    "5m",
    "1h30m",
    "500ms",
    "1.5h",
    "0.5s",
    "1h2m3s4ms",
    "2m30s",
    "90s",
    "007s",
    "876000h",
)
MALFORMED = (
    "",
    "5 minutes",
    "30",
    "-5s",
    "+5s",
    "1d",
    "1w",
    "1us",
    "30s1m",
    "1h1h",
    "1m30m",
    "5m ",
    " 5m",
    "5m\n",
    "1H",
    "5S",
    ".5s",
    "5.s",
    "1h-30m",
    "1h 30m",
    "s",
    "ms",
    "1,5s",
    "1e3s",
    "PT5M",
)
