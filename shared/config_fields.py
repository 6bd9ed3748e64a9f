"""How a setting is declared: its variable, its kind (how the text is read) and its meaning.

Each Settings field carries its declaration in its dataclass metadata (`setting(...)`), so the
parsing in settings_from_env and docs/configuration.md are both read off the one field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from shared.errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class Kind(Generic[T]):
    """How a variable's text becomes a value: `parse(text, variable name)`, or ConfigError."""

    label: str  # the type as docs/configuration.md names it
    parse: Callable[[str, str], T]
    # An empty variable means the default (numbers); otherwise "" is read like any text.
    blank_is_default: bool = False


@dataclass(frozen=True)
class Declared:
    """One setting's declaration (the field's name and type are the Settings field's)."""

    env: str
    kind: Kind[Any]
    meaning: str
    choices: tuple[str, ...] = ()
    shown_default: str | None = None  # the default as the docs say it, when not the value
    # A moving window on messages, and whom it counts (`user`, `client`, `global`, `daily`:
    # shared/limits/windows.py SCOPES): every message is checked against it at admission.
    limit: str = ""


META = "setting"


def setting(env: str, kind: Kind[T], default: T, meaning: str, *,
            choices: tuple[str, ...] = (), shown_default: str | None = None,
            secret: bool = False, limit: str = "") -> T:
    """A Settings field read from `env`: one declaration for parsing, the docs and, with
    `limit=`, the message windows a message is admitted against."""
    declared = Declared(env, kind, meaning, choices, shown_default, limit)
    # A dataclasses.Field at run time; typed as its value so each field keeps its own type.
    return cast(T, field(default=default, repr=not secret, metadata={META: declared}))


def _positive(cast: Callable[[str], float]) -> Callable[[str, str], Any]:
    def parse(raw: str, name: str) -> Any:
        try:
            value = cast(raw)
        except ValueError:
            raise ConfigError(f"{name} must be a number") from None
        if value <= 0:
            raise ConfigError(f"{name} must be positive")
        return value
    return parse


def _count(raw: str, name: str) -> int:
    # Like a positive number but 0 is allowed: it switches an optional cap off.
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number") from None
    if value < 0:
        raise ConfigError(f"{name} may not be negative (0 switches it off)")
    return value


def parse_bool(raw: str, name: str) -> bool:
    """true/false, yes/no, on/off or 1/0; anything else is refused."""
    low = raw.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, not {raw!r}")


def _origins(raw: str, name: str) -> tuple[str, ...]:
    return tuple(o.strip().rstrip("/") for o in raw.split(",") if o.strip())


def _languages(raw: str, name: str) -> tuple[str, ...]:
    # `off` (or empty) is none.
    if raw.strip().lower() in ("", "off", "none"):
        return ()
    return tuple(dict.fromkeys(x.strip().lower() for x in raw.split(",") if x.strip()))


def _proxies(raw: str, name: str) -> str:
    # 'none' states that there are none.
    return "" if raw.strip().lower() == "none" else raw


TEXT: Kind[str] = Kind("text", lambda raw, name: raw)
TRIMMED: Kind[str] = Kind("text", lambda raw, name: raw.strip())
URL: Kind[str] = Kind("URL", lambda raw, name: raw.rstrip("/"))
DSN: Kind[str] = Kind("PostgreSQL URL", lambda raw, name: raw)
LOWER: Kind[str] = Kind("word", lambda raw, name: raw.lower())
WORD: Kind[str] = Kind("word", lambda raw, name: raw.strip().lower())
BOOL: Kind[bool] = Kind("true/false", parse_bool)
POSITIVE_INT: Kind[int] = Kind("whole number > 0", _positive(int), blank_is_default=True)
SECONDS: Kind[float] = Kind("seconds > 0", _positive(float), blank_is_default=True)
COUNT: Kind[int] = Kind("whole number, 0 = off", _count, blank_is_default=True)
RATE: Kind[str] = Kind("rate (`N/unit`, `N per M units`)", lambda raw, name: raw)
ORIGINS: Kind[tuple[str, ...]] = Kind("comma-separated origins", _origins)
LANGUAGES: Kind[tuple[str, ...]] = Kind("comma-separated languages, or `off`", _languages)
NETWORKS: Kind[str] = Kind("comma-separated addresses or CIDR blocks", lambda raw, name: raw)
PROXIES: Kind[str] = Kind("comma-separated addresses or CIDR blocks, or `none`", _proxies)


@dataclass(frozen=True)
class ProcessVar:
    """A variable one process reads before (or without) Settings: gunicorn's, the CLI's."""

    env: str
    default: str
    meaning: str
    read_by: str

    def get(self, env: Any) -> str:
        """Its value in `env` (a mapping such as os.environ), else its default."""
        value: str = env.get(self.env, self.default)
        return value
