"""What a refusal by the API server must read like: a sentence, not a regular expression."""

# Refusals after which the API server runs no CEL rule, and says so in a cause of its own: a value
# of the wrong JSON type, a missing required field, a string or list over its bound. CEL cannot
# take these over: a rule sees no field of another type, the rules of the object above read the
# required fields, and the bounds bound the rules' cost (docs/api-reference.md, Validation rules).
STOPS_CEL = {"FieldValueTypeInvalid", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany"}
NOT_CHECKED = "validation rules were not checked"
READABLE_LENGTH = 250  # the longest: the thirteen presets a metric may name
_PATTERN_SIGNS = ("^(", "^[", ")$", "]*", "]+", "should match")


def is_readable(message: str) -> bool:
    """Short enough to read, and no pattern in it."""
    return len(message) < READABLE_LENGTH and not any(sign in message for sign in _PATTERN_SIGNS)
