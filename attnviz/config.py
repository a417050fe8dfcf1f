"""Deployment settings read from the environment, so one code base serves a laptop, a
classroom image and a public demo.

ATTNVIZ_DEMO=1               public-demo mode: models restricted to an allow-list, no free-text id
ATTNVIZ_ALLOWED_MODELS=a,b   the allow-list (default in demo mode: minilm,e5-small,scratch)
ATTNVIZ_EXTRA_MODELS=a,b     models offered in the model list besides the built-in ones (the
                             Docker image sets this to the ids baked in with EXTRA_MODELS)
ATTNVIZ_MAX_CHARS=N          longest text accepted, checked before tokenising (default 50000)
ATTNVIZ_MAX_TOKENS=N         tokens kept after truncation (default 512)
ATTNVIZ_DECODER_TOKENS=N     at most this many for the built-in decoder, SmolLM2 (default: as many, demo
                             256: its pass at 512 tokens adds about 430 MB over its 540 MB of weights)
ATTNVIZ_CACHE_MB=N           megabytes of analysis results kept in memory per process (default 128: one
                             512-token result of a 6 x 12 model is 75 MB; a server should stay under ~1 GB)
ATTNVIZ_CACHE_ENTRIES=N      results kept in memory per process (default 32)
ATTNVIZ_EXPLAIN_TOKENS=N     longest input the slow explanations (occlusion, gradients, value zeroing, head
                             importance) run on; longer ones are cut with a notice (default 512, demo 128)
ATTNVIZ_BUDGET_S=N           seconds of explanation work one visitor may start per 10 minutes (default 600,
                             demo 120); beyond it the visitor is asked to wait
ATTNVIZ_CORPUS_UPLOAD_MB=N   largest corpus file a visitor may upload on the Corpus page (default 50, demo 2)
ATTNVIZ_CORPUS_SENTENCES=N   lines or rows of a corpus analysed on the Corpus page (default 20000, demo 500)
ATTNVIZ_TRAIN_MAX_STEPS=N    most training steps of the training lab (default 20000, demo 2000)
ATTNVIZ_TRAIN_MAX_D_MODEL=N  widest model it trains (default 256, demo 64)
ATTNVIZ_TRAIN_MAX_LAYERS=N   deepest (default 4, demo 2)
ATTNVIZ_TRAIN_MAX_HEADS=N    most heads a layer (default 8, demo 4)
ATTNVIZ_MEMORY_MB=N          the server's memory budget: past it, new heavy work (explanations, flow,
                             training, corpus runs, model builds) waits in the queue (default 0: none,
                             demo 1500)
ATTNVIZ_MODELS_MB=N          megabytes of model weights kept loaded: past it the least recently used models
                             are dropped (default 0: no limit but the count, demo 1024; SmolLM2 is 540 MB)
ATTNVIZ_TRUST_PROXY=1        the app is behind a reverse proxy: a visitor is told apart by the client
                             address the proxy appends to X-Forwarded-For (default: by a cookie)
ATTNVIZ_CLASSES=0            no classes (the /class page says so; default: on, also in demo mode)
ATTNVIZ_DATA_DIR=DIR         the folder of the classes' SQLite file (default $XDG_DATA_HOME/attnviz or
                             ~/.local/share/attnviz; the Docker image's volume /data)
ATTNVIZ_DATABASE_URL=URL     keep classes in PostgreSQL instead (postgresql://user:pass@host/db), so several
                             replicas behind a load balancer serve one class
ATTNVIZ_PUBLIC_URL=URL       the address students reach the app at, for the join link and its QR code, where
                             the teacher's browser sees another (a hosted server behind a proxy)
ATTNVIZ_CLASS_RETENTION_DAYS=N  a class and its answers are deleted N days after it started (default 30)
ATTNVIZ_CLASS_MAX_STUDENTS=N the most students a class takes (default 200, demo 40)
ATTNVIZ_CLASS_ANSWERS_PER_MINUTE=N  the most answers a student may give in a minute (default 30)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .cache import DEFAULT_CACHE_ENTRIES, DEFAULT_CACHE_MB
from .models.names import E5_MODEL, EMBEDDED_MODEL, SMOLLM2_MODEL, check_model_name
from .models.tokens import DEFAULT_MAX_TOKENS, check_text  # the one text check, re-exported

__all__ = ["DEFAULT_MAX_CHARS", "Settings", "check_text", "settings_from_env"]

# 3,000 words of English is about 18,000 characters and must still be accepted (then truncated
# to 512 tokens); a 1 MB paste is refused before it costs any tokenising time.
DEFAULT_MAX_CHARS = 50_000
# e5-small: the multilingual one (reads Chinese); smollm2: the decoder, loaded only when chosen
BUILTIN_MODELS = (EMBEDDED_MODEL, E5_MODEL, "scratch", SMOLLM2_MODEL)


def _env(default: int, minimum: int, demo: int | None = None) -> Any:
    """A number read from ATTNVIZ_<FIELD NAME>: at least `minimum`; `demo`: its default in demo mode."""
    defaults = {"default": default, "demo": default if demo is None else demo}
    return field(default=default, metadata={"minimum": minimum, **defaults})


@dataclass(frozen=True)
class Settings:
    demo: bool = False
    allowed_models: tuple[str, ...] = ()  # empty: anything (local use)
    extra_models: tuple[str, ...] = ()  # offered as choices next to minilm and scratch
    max_chars: int = _env(DEFAULT_MAX_CHARS, 1)
    max_tokens: int = _env(DEFAULT_MAX_TOKENS, 2)
    decoder_tokens: int = _env(DEFAULT_MAX_TOKENS, 2, demo=256)
    cache_mb: int = _env(DEFAULT_CACHE_MB, 0)
    cache_entries: int = _env(DEFAULT_CACHE_ENTRIES, 0)
    explain_tokens: int = _env(DEFAULT_MAX_TOKENS, 2, demo=128)
    budget_s: int = _env(600, 0, demo=120)
    corpus_upload_mb: int = _env(50, 1, demo=2)
    corpus_sentences: int = _env(20_000, 1, demo=500)
    train_max_steps: int = _env(20_000, 1, demo=2_000)
    train_max_d_model: int = _env(256, 8, demo=64)
    train_max_layers: int = _env(4, 1, demo=2)
    train_max_heads: int = _env(8, 1, demo=4)
    memory_mb: int = _env(0, 0, demo=1500)
    models_mb: int = _env(0, 0, demo=1024)
    trust_proxy: bool = False
    classes: bool = True
    data_dir: str = ""  # empty: classes.engine.default_data_dir()
    database_url: str = ""
    public_url: str = ""
    class_retention_days: int = _env(30, 1)
    class_max_students: int = _env(200, 1, demo=40)
    class_answers_per_minute: int = _env(30, 1)

    @property
    def model_choices(self) -> tuple[str, ...]:
        """Models to offer in a list: the built-in ones, extras, and the allow-list, in order."""
        names = [*BUILTIN_MODELS, *self.extra_models, *self.allowed_models]
        return tuple(dict.fromkeys(n for n in names if not self.allowed_models or n in self.allowed_models))

    @property
    def free_model_ids(self) -> bool:
        """Whether a user may type any Hugging Face id or local directory."""
        return not self.allowed_models

    def token_limit(self, model: str) -> int:
        """The most tokens a page keeps for `model`: max_tokens, and for the built-in decoder at
        most decoder_tokens (the demo's memory budget: bench/results_hall.md)."""
        return min(self.max_tokens, self.decoder_tokens) if model == SMOLLM2_MODEL else self.max_tokens

    def check_model(self, name: str) -> str:
        """The name, stripped, if this deployment allows it; ValueError before any loading if not
        (names are also capped in length and characters: `models.check_model_name`)."""
        name = check_model_name(name)
        if self.allowed_models and name not in self.allowed_models:
            raise ValueError(f"model '{name}' is not available here; choose one of: {', '.join(self.allowed_models)}")
        return name

    def check_training(self, steps: int, layers: int, heads: int, d_model: int) -> None:
        """ValueError (safe to show) when a training run is larger than this deployment allows."""
        for what, value, limit in (
            ("steps", steps, self.train_max_steps),
            ("layers", layers, self.train_max_layers),
            ("heads", heads, self.train_max_heads),
            ("d_model", d_model, self.train_max_d_model),
        ):
            if value > limit:
                raise ValueError(f"{what} is {value:,}; the limit here is {limit:,}")


def settings_from_env(env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    demo = env_flag(env, "ATTNVIZ_DEMO")
    allowed = _names(env.get("ATTNVIZ_ALLOWED_MODELS", ""))
    if demo and not allowed:
        allowed = BUILTIN_MODELS
    mode = "demo" if demo else "default"
    numbers = {
        f.name: env_int(env, f"ATTNVIZ_{f.name.upper()}", f.metadata[mode], f.metadata["minimum"])
        for f in fields(Settings)
        if f.metadata
    }
    return Settings(
        demo=demo,
        allowed_models=allowed,
        extra_models=_names(env.get("ATTNVIZ_EXTRA_MODELS", "")),
        trust_proxy=env_flag(env, "ATTNVIZ_TRUST_PROXY"),
        classes=env_flag(env, "ATTNVIZ_CLASSES", default=True),
        data_dir=env.get("ATTNVIZ_DATA_DIR", "").strip(),
        database_url=env.get("ATTNVIZ_DATABASE_URL", "").strip(),
        public_url=env.get("ATTNVIZ_PUBLIC_URL", "").strip().rstrip("/"),
        **numbers,
    )


def _names(raw: str) -> tuple[str, ...]:
    return tuple(m.strip() for m in raw.replace(",", " ").split() if m.strip())


def env_flag(env: Mapping[str, str], key: str, default: bool = False) -> bool:
    """An on/off variable: 1, true, yes, on or 0, false, no, off, in any case; anything else is `default`."""
    raw = env.get(key, "").strip().lower()
    return raw in ("1", "true", "yes", "on") or (default and raw not in ("0", "false", "no", "off"))


def env_int(env: Mapping[str, str], key: str, default: int, minimum: int) -> int:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        return max(minimum, int(raw))
    except ValueError:
        return default
