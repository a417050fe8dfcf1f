"""A class's code, its teacher secret and a student's token, and the checks of what a visitor
sends for them.

The code is read aloud and typed from a projector: six characters of an alphabet without the
look-alikes 0/O, 1/I/L (31 symbols, 31^6 = 887 million codes). It names a class and opens
nothing on its own. The teacher secret (192 bits) opens the dashboard; a student token (128 bits)
is one student's place in the class. Only their SHA-256 digests are stored, so a copy of the
database lets no one act as a teacher or a student; a given secret is compared with the stored
digest in constant time (`hmac.compare_digest`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import unicodedata

from ..models.tokens import clean_text

__all__ = [
    "ALPHABET",
    "CODE_LENGTH",
    "NAME_MAX",
    "TITLE_MAX",
    "clean_name",
    "digest",
    "matches",
    "new_code",
    "new_secret",
    "new_token",
    "read_code",
    "read_token",
]

ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0, O, 1, I, L
CODE_LENGTH = 6
SECRET_BYTES = 24  # 192 bits; the issue asks at least 128
TOKEN_BYTES = 16  # 128 bits
NAME_MAX = 40  # a display name on the dashboard's grid
TITLE_MAX = 120
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")  # token_urlsafe's alphabet; longer values are refused unread


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def new_secret() -> str:
    return secrets.token_urlsafe(SECRET_BYTES)


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def matches(given: object, stored_digest: str) -> bool:
    """Whether `given` is the secret whose digest is stored, in time independent of where they differ."""
    if not isinstance(given, str) or _TOKEN.fullmatch(given) is None:
        return False
    return hmac.compare_digest(digest(given), stored_digest)


def read_code(raw: object) -> str | None:
    """A typed code as stored (upper case, spaces and dashes dropped: "ab3 k7q" reads as AB3K7Q),
    or None when it cannot be one (wrong length or a character outside the alphabet)."""
    if not isinstance(raw, str) or len(raw) > 3 * CODE_LENGTH:
        return None
    code = re.sub(r"[\s-]", "", raw).upper()
    if len(code) != CODE_LENGTH or any(c not in ALPHABET for c in code):
        return None
    return code


def read_token(raw: object) -> str | None:
    """A token or secret from a link, or None when it cannot be one."""
    return raw if isinstance(raw, str) and _TOKEN.fullmatch(raw) else None


def clean_name(raw: object, limit: int = NAME_MAX) -> str:
    """A display name or title as kept: control and format characters (bidi overrides among them)
    out, white space collapsed, at most `limit` characters; "" when nothing is left. It stays
    visitor text: whoever shows it escapes it for where it lands."""
    if not isinstance(raw, str):
        return ""
    text = clean_text(raw[: limit * 4])
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Cc", "Co", "Cs"))
    return " ".join(text.split())[:limit]
