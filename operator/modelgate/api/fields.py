"""Constrained field types shared by the spec models; `make generate` writes their patterns, lengths and
CEL rules into the CRD."""

import re
from datetime import timedelta
from typing import Annotated

from pydantic import AfterValidator, AllowInfNan, Field, Strict, StringConstraints

from modelgate.api.addresses import METADATA_ADDRESSES, AddressRefused, Refusal, literal_ip, parse_target
from modelgate.api.duration import (
    DURATION_PATTERN,
    MAX_DURATION_TEXT,
    NOT_A_DURATION,
    WITHIN_GO_RANGE_PATTERN,
    parse_duration,
)
from modelgate.api.markers import CelRule, JsonDict, cel_rules
from modelgate.api.object_url import OBJECT_URL_PATTERN, PREFIX_URL_PATTERN

OBJECT_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
METRIC_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
SECRET_KEY_PATTERN = r"^[-._a-zA-Z0-9]+$"
# No quotes, braces or backslashes: the value goes inside a PromQL label matcher unescaped.
POD_REGEX_PATTERN = r"^[a-zA-Z0-9.\-_*+?()|\[\]^$]+$"
HTTP_URL_PATTERN = r"^https?://[^\s/?#]+(/[^\s]*)?$"
# Model names as gateways report them, e.g. meta-llama/Llama-3.1-8B-Instruct or food-review:lora.
MODEL_NAME_PATTERN = r"^[a-zA-Z0-9][a-zA-Z0-9._:/-]*$"
# A Kubernetes quantity without exponents: 500m, 2, 1.5, 512Mi, 4G.
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
# A Kubernetes resource name: an optional DNS-1123 subdomain prefix and `/`, then a name of letters,
# digits, `-`, `_` and `.` (nvidia.com/gpu, amd.com/gpu, google.com/tpu, cpu).
RESOURCE_NAME_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
ENV_NAME_PATTERN = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"
RELATIVE_PATH_PATTERN = r"^[^/].*$"
RUN_ID_PATTERN = r"^[0-9]{8}T[0-9]{6}$"

# What a value failing each pattern should look like instead, for error messages.
# WorkloadObjectRef's (api/workload_object.py) apiVersion and kind, as its fields spell them.
API_VERSION_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?v[0-9]+((alpha|beta)[0-9]+)?$"
)
KIND_PATTERN = r"^[A-Z][A-Za-z0-9]{0,62}$"
PATTERN_HINTS = {
    OBJECT_NAME_PATTERN: "must be a lowercase RFC 1123 name: a-z, 0-9, '-' and '.', "
    "starting and ending with a letter or digit",
    METRIC_NAME_PATTERN: "must be a lowercase RFC 1123 label: a-z, 0-9 and '-', "
    "starting and ending with a letter or digit",
    SECRET_KEY_PATTERN: "must consist of letters, digits, '-', '_' and '.'",
    POD_REGEX_PATTERN: "must be a regular expression without quotes, braces, backslashes or spaces",
    HTTP_URL_PATTERN: "must be an http:// or https:// URL",
    MODEL_NAME_PATTERN: "must consist of letters, digits, '.', '_', ':', '/' and '-', starting with a "
    "letter or digit",
    QUANTITY_PATTERN: "must be a Kubernetes quantity such as 500m, 2, 512Mi or 4Gi",
    RESOURCE_NAME_PATTERN: "must be a Kubernetes resource name such as nvidia.com/gpu, amd.com/gpu or cpu",
    ENV_NAME_PATTERN: "must be an environment variable name: letters, digits, '-', '_' and '.', "
    "not starting with a digit",
    RELATIVE_PATH_PATTERN: "must be a path relative to the volume's root, not starting with /",
    RUN_ID_PATTERN: "must be a run's id, its start in UTC such as 20260501T120000",
    OBJECT_URL_PATTERN: "must be an s3://bucket/key URL: a bucket of lowercase letters, digits, '.' and "
    "'-', then a key of non-empty segments of letters, digits and -_.!*'()=+,:@",
    PREFIX_URL_PATTERN: "must be an s3://bucket or s3://bucket/prefix URL: a bucket of lowercase letters, "
    "digits, '.' and '-', then segments of letters, digits and -_.!*'()=+,:@",
    API_VERSION_PATTERN: "must be an apiVersion such as apps/v1 or leaderworkerset.x-k8s.io/v1: an "
    "optional lowercase DNS group and "
    "'/', then a version such as v1, v1beta1 or v2alpha1",
    KIND_PATTERN: "must be a kind such as StatefulSet: a capital letter, then letters and digits",
}


def _admissible_address(url: str) -> str:
    """What admission can see of an address (the CEL rules of HttpUrl say the same): no
    credentials, no fragment, no localhost, no link-local or metadata IP, no IP in a disguised form.
    The operator and the evaluator check what a host name resolves to when they connect."""
    if re.match(_NON_ASCII_HOST, url):
        raise ValueError(NON_ASCII_HOST)
    try:
        target = parse_target(url)
    except AddressRefused as refused:
        if refused.refusal is Refusal.NOT_HTTP:
            return url  # the pattern's error says what an address must look like
        raise ValueError(refused.refusal.value) from None
    host, ip = target.host, literal_ip(target.host)
    if host.rstrip(".") == "localhost" or host.rstrip(".").endswith(".localhost"):
        raise ValueError(NAMES_LOCALHOST)
    if ip is not None and ip.version == 4 and host != str(ip):
        raise ValueError(DISGUISED_IP)
    if ip is not None and (ip.is_link_local or ip in METADATA_ADDRESSES):
        raise ValueError(Refusal.LINK_LOCAL.value)
    return url


def _parses_as_duration(text: str) -> str:
    parse_duration(text)
    return text


def _compiles(regex: str) -> str:
    # The CRD's CEL rule does the same with RE2, which agrees with `re` on what the pattern lets through.
    try:
        re.compile(regex)
    except re.error as error:
        raise ValueError(f"must be a valid regular expression ({error})") from None
    return regex


def _is_positive_duration(text: str) -> str:
    if parse_duration(text) <= timedelta():
        raise ValueError("must be greater than zero")
    return text


# What the CRD's integer, number and boolean take: JSON values of that type only. Pydantic's lax
# mode would also take "10" or "yes", which the API server refuses.
Integer = Annotated[int, Strict()]
Number = Annotated[float, Strict(), AllowInfNan(False)]
Boolean = Annotated[bool, Strict()]
ObjectName = Annotated[str, StringConstraints(max_length=253, pattern=OBJECT_NAME_PATTERN)]
MetricName = Annotated[str, StringConstraints(max_length=63, pattern=METRIC_NAME_PATTERN)]
SecretKey = Annotated[str, StringConstraints(max_length=253, pattern=SECRET_KEY_PATTERN)]
PodRegex = Annotated[
    str,
    StringConstraints(max_length=253, pattern=POD_REGEX_PATTERN),
    AfterValidator(_compiles),
    Field(
        json_schema_extra=cel_rules(
            # True for any regex that compiles; one that does not fails to evaluate, which rejects
            # the object with the parse error, e.g. "missing closing )".
            CelRule("''.matches(self) || !''.matches(self)", message="must be a valid regular expression")
        )
    ),
]
ModelName = Annotated[str, StringConstraints(max_length=253, pattern=MODEL_NAME_PATTERN)]
Quantity = Annotated[str, StringConstraints(max_length=32, pattern=QUANTITY_PATTERN)]
NAMES_LOCALHOST = "names localhost; a loopback address is refused (a local bed allows 127.0.0.1)"
DISGUISED_IP = "names an IPv4 address in a form other than a.b.c.d (decimal, octal or hex)"
# The clients map a non-ASCII host by UTS-46 (fullwidth digits and stops are an IP), which no rule
# here can.
NON_ASCII_HOST = "has a host with non-ASCII characters; write an internationalised name in its xn-- form"
_NON_ASCII_HOST = "^https?://[^/?#]*[^ -~]"
_OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_HOST_END = "([:/?]|$)"
# Regular expressions over the whole URL, in RE2 (the API server's) and Python alike.
_ADDRESS_RULES = (
    CelRule("!self.matches('^[a-zA-Z]+://[^/?#]*@')", message=Refusal.USERINFO.value),
    CelRule("!self.contains('#')", message=Refusal.FRAGMENT.value),
    CelRule(f"!self.matches('{_NON_ASCII_HOST}')", message=NON_ASCII_HOST),
    CelRule("!self.matches('^https?://([^/?#@]*[.])?[.]')", message=Refusal.NOT_IDNA.value),
    CelRule(
        f"!self.matches('(?i)^https?://(([^/?#:]*[.])?localhost[.]?){_HOST_END}')", message=NAMES_LOCALHOST
    ),
    CelRule(
        f"!self.matches('^https?://[0-9][0-9a-fA-FxX.]*{_HOST_END}') || "
        f"self.matches('^https?://{_OCTET}([.]{_OCTET}){{3}}{_HOST_END}')",
        message=DISGUISED_IP,
    ),
    CelRule(
        "!self.matches('(?i)^https?://(169[.]254[.]|[[]fe[89ab][0-9a-f]:|100[.]100[.]100[.]200"
        f"{_HOST_END}|[[]fd00:ec2::254[]])')",
        message=Refusal.LINK_LOCAL.value,
    ),
)
HttpUrl = Annotated[
    str,
    StringConstraints(max_length=2048, pattern=HTTP_URL_PATTERN),
    AfterValidator(_admissible_address),
    Field(json_schema_extra=cel_rules(*_ADDRESS_RULES)),
]
_IN_GO_RANGE = f"self.matches('{WITHIN_GO_RANGE_PATTERN}')"
# A CEL rule rather than the schema's `pattern`, whose refusal quotes the 600-character pattern (the
# API server quotes the value before the message). The rules below pass a malformed value, leaving
# it to this one's sentence.
_WELL_FORMED = f"self.matches('{DURATION_PATTERN}')"
_IS_A_DURATION = CelRule(_WELL_FORMED, message=NOT_A_DURATION)
# CEL's duration() fails to evaluate beyond Go's limit (about 2.5 million hours), which would refuse
# the value with a type conversion error instead of the bound: it is only called on values within it.
_AT_MOST_MAX_DURATION = CelRule(
    f"!{_WELL_FORMED} || ({_IN_GO_RANGE} && duration(self) <= duration('{MAX_DURATION_TEXT}'))",
    message=f"must be at most {MAX_DURATION_TEXT} (100 years)",
)


def _duration_rules(*more: CelRule) -> JsonDict:
    """The `json_schema_extra` of a duration field: well-formed, at most MAX_DURATION, and `more`."""
    return cel_rules(_IS_A_DURATION, _AT_MOST_MAX_DURATION, *more)


def _duration_bound(comparison: str, bound: str, message: str) -> CelRule:
    """`duration(self) <comparison> duration(bound)`, for the values the rules above accept."""
    return CelRule(
        f"!{_WELL_FORMED} || !{_IN_GO_RANGE} || duration(self) {comparison} duration('{bound}')",
        message=message,
    )


def _at_least(bound: str) -> AfterValidator:
    def check(text: str) -> str:
        if parse_duration(text) < parse_duration(bound):
            raise ValueError(f"must be at least {bound}")
        return text

    return AfterValidator(check)


def _at_most(bound: str) -> AfterValidator:
    def check(text: str) -> str:
        if parse_duration(text) > parse_duration(bound):
            raise ValueError(f"must be at most {bound}")
        return text

    return AfterValidator(check)


Duration = Annotated[
    str,
    StringConstraints(max_length=32),
    AfterValidator(_parses_as_duration),
    Field(json_schema_extra=_duration_rules()),
]
# A well-formed duration is positive exactly when it has a non-zero digit; unlike duration(), this
# cannot fail to evaluate.
_POSITIVE = CelRule(f"!{_WELL_FORMED} || self.matches('[1-9]')", message="must be greater than zero")
PositiveDuration = Annotated[
    Duration,
    AfterValidator(_is_positive_duration),
    Field(json_schema_extra=_duration_rules(_POSITIVE)),
]
# What one tenant's Prometheus may hold one of the operator's threads for, per query: a server that
# never answers holds it this long (the queries of one evaluation share a deadline too: metrics/).
MAX_QUERY_TIMEOUT = "60s"
QueryTimeout = Annotated[
    PositiveDuration,
    _at_most(MAX_QUERY_TIMEOUT),
    Field(
        json_schema_extra=_duration_rules(
            _POSITIVE, _duration_bound("<=", MAX_QUERY_TIMEOUT, f"must be at most {MAX_QUERY_TIMEOUT}")
        )
    ),
]
# How often one rollout's metrics may be evaluated at most: every evaluation takes a thread and runs
# every query of the rollout.
MIN_INTERVAL = "1s"
Interval = Annotated[
    Duration,
    _at_least(MIN_INTERVAL),
    Field(
        json_schema_extra=_duration_rules(
            _duration_bound(">=", MIN_INTERVAL, f"must be at least {MIN_INTERVAL}")
        )
    ),
]
