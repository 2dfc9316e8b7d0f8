"""The REST API's users: a credentials file of ``username=<argon2id hash>`` lines, and its checker.

Our analogue of Kafka Connect's ``BasicAuthSecurityRestExtension`` with its ``PropertyFileLoginModule``,
minus that module's weakness: its file keeps plaintext passwords, ours keeps only salted Argon2id hashes
(``mirror-sink passwd FILE USER`` writes them). A plaintext value is refused at start-up, naming the
file and line but never the value.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import stat
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from mirror_sink.core.base.errors import ConfigError

log = logging.getLogger(__name__)

KEY = "rest.basic.auth.credentials.file"
_ARGON2_PREFIXES = ("$argon2id$", "$argon2i$", "$argon2d$")
#: Basic auth splits ``user:password`` at the first colon; the file splits at the first ``=``.
_BAD_USER_CHARS = frozenset(":= \t#")


def hasher() -> PasswordHasher:
    """argon2-cffi's defaults (Argon2id, RFC 9106's low-memory profile): about 50 ms a check."""
    return PasswordHasher()


def check_username(user: str) -> str:
    """``user`` if it can be a username here; ValueError otherwise."""
    if not user or any(c in _BAD_USER_CHARS for c in user):
        raise ValueError(f"invalid username {user!r}: it must be non-empty, without ':', '=', '#' or blanks")
    return user


def parse_credentials(path: Path) -> dict[str, str]:
    """``{user: argon2 hash}`` from ``path``; ConfigError naming the file (and line) when unusable."""
    try:
        text = path.read_text(encoding="utf-8")
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigError(KEY, f"cannot read {path}: {exc.strerror}") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        # Hashes are not passwords, but an offline guessing attack starts from them.
        log.warning("%s is readable by other users (mode %o): chmod 600 it", path, stat.S_IMODE(mode))
    users: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, value = line.partition("=")
        user, value = user.strip(), value.strip()
        where = f"{path}:{number}"
        if not sep or not user:
            raise ConfigError(KEY, f"{where}: expected username=<argon2 hash>")
        try:
            check_username(user)
        except ValueError as exc:
            raise ConfigError(KEY, f"{where}: {exc}") from None
        if not value.startswith(_ARGON2_PREFIXES) or not _parses(value):
            # The value is never shown: it may well be somebody's plaintext password.
            raise ConfigError(
                KEY,
                f"{where}: the value for user {user!r} is not an argon2 hash (plaintext passwords are refused); "
                f"set it with: mirror-sink passwd {path} {user}",
            )
        if user in users:
            raise ConfigError(KEY, f"{where}: user {user!r} is listed twice")
        users[user] = value
    return users


def _parses(value: str) -> bool:
    from argon2 import extract_parameters

    try:
        extract_parameters(value)
    except InvalidHashError:
        return False
    return True


def set_password(path: Path, user: str, password: str) -> bool:
    """Write ``user``'s line (a fresh salted hash) into ``path``, replacing any line of that user;
    True when the user is new. The file is replaced atomically and created with mode 0600."""
    check_username(user)
    if not password:
        raise ValueError("the password is empty")
    line = f"{user}={hasher().hash(password)}"
    try:
        old = path.read_text(encoding="utf-8").splitlines()
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        old, mode = [], 0o600
    lines, found = [], False
    for raw in old:
        name, sep, _ = raw.strip().partition("=")
        if sep and not raw.strip().startswith("#") and name.strip() == user:
            if not found:
                lines.append(line)
            found = True
        else:
            lines.append(raw)
    if not found:
        lines.append(line)
    # mkstemp creates the file 0600 whatever the umask, so the new hash is never briefly world-readable.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return not found


@dataclass
class BasicAuthenticator:
    """Checks ``user``/``password`` pairs against the hashes of a credentials file.

    Argon2 costs about 50 ms of CPU on purpose; a status page polling every second would burn a core
    re-checking the same pair. A successful check is therefore remembered in memory for ``ttl_s``
    under (user, keyed digest of the password): the digest uses a per-process random key, so the
    cache holds no password and nothing a reader of this process's memory could reuse offline.
    Failures are never cached (a wrong guess costs the guesser the full 50 ms each time).
    """

    users: dict[str, str]
    ttl_s: float = 30.0
    max_entries: int = 1024
    _hasher: PasswordHasher = field(default_factory=hasher)
    _key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    _cache: dict[tuple[str, bytes], float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # Checked for unknown users too, so that a miss takes as long as a wrong password.
    _dummy: str = field(default="")

    def __post_init__(self) -> None:
        self._dummy = self._hasher.hash(secrets.token_hex(16))

    @classmethod
    def from_file(cls, path: Path) -> BasicAuthenticator:
        """The users of ``path`` (ConfigError if it is unreadable or holds a plaintext password)."""
        return cls(parse_credentials(path))

    def verify(self, user: str, password: str) -> bool:
        """True when ``password`` is ``user``'s (Argon2's verify: constant time in the password)."""
        digest = hmac.new(self._key, f"{user}\0{password}".encode(), hashlib.sha256).digest()
        now = time.monotonic()
        with self._lock:
            expires = self._cache.get((user, digest))
            if expires is not None and expires > now:
                return True
        stored = self.users.get(user)
        try:
            self._hasher.verify(stored or self._dummy, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False
        if stored is None:
            return False
        with self._lock:
            if len(self._cache) >= self.max_entries:
                self._cache = {k: t for k, t in self._cache.items() if t > now}
                if len(self._cache) >= self.max_entries:
                    self._cache.clear()
            self._cache[(user, digest)] = now + self.ttl_s
        return True
