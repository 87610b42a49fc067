"""IPv4 addresses written as hosts the HTTP clients turn back into the address: UTS-46 maps fullwidth
digits and stops, ideographic full stops and enclosed numbers to ASCII; a resolver reads decimal,
octal, hex and short forms (inet_aton). Built here, as their characters look like ASCII in source."""

from __future__ import annotations

IDEOGRAPHIC_FULL_STOP = "\u3002"
HALFWIDTH_IDEOGRAPHIC_FULL_STOP = "\uff61"
# Enclosed alphanumerics: "(12)(7)" maps to "127", "(16)(9)" to "169".
CIRCLED_12_7 = "\u246b\u2466"
CIRCLED_16_9 = "\u246f\u2468"


def fullwidth(text: str) -> str:
    """`text` with each ASCII digit and "." in its fullwidth form (U+FF10..., U+FF0E)."""
    return "".join(chr(ord(char) + 0xFEE0) for char in text)


def unicode_forms(ip: str) -> list[str]:
    """`ip` in the Unicode forms UTS-46 maps back to it."""
    return [
        fullwidth(ip),
        ip.replace(".", IDEOGRAPHIC_FULL_STOP),
        ip.replace(".", HALFWIDTH_IDEOGRAPHIC_FULL_STOP),
    ]


# Each a form of 127.0.0.1 some client connects to as that address.
LOOPBACK_FORMS = [
    *unicode_forms("127.0.0.1"),
    f"{CIRCLED_12_7}.0.0.1",
    "2130706433",  # decimal
    "0177.0.0.1",  # octal
    "0x7f.0.0.1",  # hex
    "127.1",  # short
]
METADATA_FORMS = [*unicode_forms("169.254.169.254"), f"{CIRCLED_16_9}.254.169.254"]
# 127.0.0.1 behind NAT64: RFC 6052's well-known prefix, and RFC 8215's local-use one.
NAT64_FORMS = ["[64:ff9b::7f00:1]", "[64:ff9b:1::7f00:1]"]
