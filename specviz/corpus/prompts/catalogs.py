"""Translated sentences from the gettext catalogs on this machine: English messages of programs and
their translations into other languages (/usr/share/locale/<lang>/LC_MESSAGES/*.mo)."""

from __future__ import annotations

import gettext
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from specviz.corpus.prompts.splits import digest

LOCALES = Path("/usr/share/locale")
LANGUAGES = {   # language -> the locale folders holding it, best first
    "French": ("fr",), "Spanish": ("es",), "German": ("de",), "Italian": ("it",), "Portuguese": ("pt_BR", "pt"),
    "Chinese": ("zh_CN",), "Japanese": ("ja",), "Russian": ("ru",), "Dutch": ("nl",), "Polish": ("pl",),
    "Korean": ("ko",), "Turkish": ("tr",), "Swedish": ("sv",), "Ukrainian": ("uk",),
}
# catalogs of names (countries, languages, currencies) and of toolchain jargon, not sentences
SKIPPED_DOMAINS = re.compile(r"^(iso_|bfd|gas|gold|gprof|ld|opcodes|binutils|xkeyboard-config|gdk-pixbuf"
                             r"|gtk\d+-properties)")
_FORMAT = re.compile(r"%|\{[\w.]*\}|\$\{|\\|<[^>]+>|\b[A-Z_]{4,}\b|--?\w|[/@_=]")


@dataclass(frozen=True)
class Message:
    """An English message and its translation in one catalog."""

    language: str
    domain: str
    english: str
    translation: str

    @property
    def key(self) -> str:
        """The split key: a message is in one split whatever the language."""
        return "message:" + self.english

    @property
    def source(self) -> str:
        return f"locale:{LANGUAGES[self.language][0]}:{self.domain}:{digest(self.english, 8)}"


def sentence_like(english: str, translation: str) -> bool:
    """Whether a catalog entry reads as prose worth translating: several words, one line, no
    format specifiers, options, paths or markup, and actually translated."""
    words = english.split()
    return (4 <= len(words) <= 45 and 20 <= len(english) <= 300 and "\n" not in english.strip()
            and "\x04" not in english and english[:1].isupper() and not _FORMAT.search(english) and translation.strip()
            and translation.strip() != english.strip() and "\n" not in translation.strip())


@cache
def messages(language: str) -> tuple[Message, ...]:
    """The sentence-like messages of every catalog in `language` on this machine (none if absent),
    each English message once."""
    found: dict[str, Message] = {}
    for folder in LANGUAGES[language]:
        for path in sorted((LOCALES / folder / "LC_MESSAGES").glob("*.mo")):
            if SKIPPED_DOMAINS.match(path.stem):
                continue
            try:
                with path.open("rb") as catalog:
                    entries = gettext.GNUTranslations(catalog)._catalog
            except (OSError, UnicodeDecodeError, LookupError, ValueError):
                continue
            for english, translation in entries.items():
                if isinstance(english, str) and isinstance(translation, str) and english not in found \
                        and sentence_like(english, translation):
                    found[english] = Message(language, path.stem, english.strip(), translation.strip())
    return tuple(found.values())
