"""The one exception storage raises: which object, and what went wrong, as data and as a message."""

from __future__ import annotations

from enum import StrEnum


class StorageProblem(StrEnum):
    """What went wrong; the message says it after the object's address."""

    NO_BUCKET = "the bucket does not exist"
    NO_KEY = "no object has this key"
    CREDENTIALS = "the store refused the credentials (a wrong access key or secret, or no permission)"
    UNREACHABLE = "the endpoint cannot be reached"
    CHANGED = "the object changed since it was read"
    REFUSED = "the endpoint is refused"
    TOO_LARGE = "the object is larger than the reader accepts"
    FAILED = "the store answered an error"


class StorageError(Exception):
    """A storage operation that failed. `url` names the object (or the bucket); `status`: the HTTP
    status the store answered, if it answered. The message says these and `detail` (the operator's
    own words), never the endpoint, a secret or what the store's answer said."""

    def __init__(
        self, url: str, problem: StorageProblem, detail: str = "", status: int | None = None
    ) -> None:
        self.url = url
        self.problem = problem
        self.detail = detail
        self.status = status
        answered = f" (HTTP {status})" if status is not None else ""
        super().__init__(f"{url}: {problem.value}{answered}{f': {detail}' if detail else ''}")
