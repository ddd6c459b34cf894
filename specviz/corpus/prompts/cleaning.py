"""Turning markup into clean paragraphs: Markdown, reStructuredText, Debian copyright files, plain text.

Links keep their words and long URLs their site's name; images, badges, tables, e-mail addresses,
directives and rules go; headings become short paragraphs of their own; short fenced code blocks
stay, long ones go.
"""

from __future__ import annotations

import html
import re

MAX_CODE_LINES = 12

_SUBSTITUTIONS = [
    (re.compile(r"<!--.*?-->", re.S), ""),
    (re.compile(r"!\[[^\]]*\]\([^)]*\)"), ""),                       # images
    (re.compile(r"\[!\[[^\]]*\]\([^)]*\)\]\([^)]*\)"), ""),          # linked badges
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),                   # [words](url)
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1"),                  # [words][ref]
    (re.compile(r"^\s*\[[^\]]+\]:\s*\S+.*$", re.M), ""),             # [ref]: url
    (re.compile(r"`([^`<]+?)\s*<[^>]+>`_+"), r"\1"),                 # rst `words <url>`_
    (re.compile(r":[\w:-]+:`([^`<]+?)(?:\s*<[^>]+>)?`"), r"`\1`"),   # rst :role:`words <target>`
    (re.compile(r"``([^`]+)``"), r"`\1`"),
    (re.compile(r"`([^`]+)`_+"), r"\1"),
    (re.compile(r"\|[\w .-]+\|_?"), ""),                             # rst |substitution|
    (re.compile(r"<?\bhttps?://(?:www\.)?([^/\s)>]+)[^\s)>]*>?"),  # urls over 30 characters: their site
     lambda m: m.group(0) if len(m.group(0)) <= 30 and m.group(0)[0] != "<" else m.group(1)),
    (re.compile(r"</?[a-zA-Z][^>]*>"), ""),                          # html tags
    (re.compile(r"<?[\w.+-]+@[\w-]+\.[\w.-]+>?"), ""),               # e-mail addresses
    (re.compile(r"\*\*(\S(?:.*?\S)?)\*\*"), r"\1"),                     # bold
    (re.compile(r"(?<![\w*])\*(\S(?:[^*]*?\S)?)\*(?![\w*])"), r"\1"),  # emphasis
]
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_RULE = re.compile(r"^\s*([=\-~^\"'`#*+:._])\1{2,}\s*$|^\s*([-*_]\s*){3,}$")
_LIST_ITEM = re.compile(r"^\s*([-*+•]|\d{1,2}[.)])\s+")
_NOT_LETTER = re.compile(r"[^\w\s]|[\d_]")
_DIRECTIVE = re.compile(r"^\.\.(\s|$)")
_FIELD = re.compile(r"^([A-Za-z][\w-]*):\s?(.*)$")
_HOLDER = re.compile(r"^\s*(copyright\b|\(c\)|©)", re.I)
_CODE_LINE = re.compile(r"[{};]\s*$|^\s*(\$ |>>> |#include|def |import |from \S+ import|return )|\w+\(.*\)\s*$|==|=>")


def clean_markup(text: str) -> list[str]:
    """Paragraphs of Markdown, reStructuredText or plain text, without the markup noise."""
    code: list[str] = []
    text = _drop_directives(_set_aside_code(text.replace("\r\n", "\n").replace("\t", "    "), code))
    for pattern, replacement in _SUBSTITUTIONS:
        text = pattern.sub(replacement, text)
    lines = []
    for line in html.unescape(text).split("\n"):
        heading = _HEADING.match(line)
        if heading:
            lines += ["", heading.group(1), ""]
        elif _RULE.match(line):
            lines.append("")
        elif line.count("|") >= 2 or line.strip() == "::":
            continue
        else:
            lines.append(re.sub(r"^\s*>\s?", "", line).rstrip())
    return [code[int(p[1:-1])] if p.startswith("\x00") else p for p in _paragraphs(lines)]


def clean_debian_copyright(text: str) -> list[str]:
    """Paragraphs of a Debian copyright file: its comments and licence texts, without the lists of
    files and copyright holders."""
    lines, keeping = [], True
    for line in text.replace("\r\n", "\n").split("\n"):
        field = _FIELD.match(line)
        if field:
            name, value = field.groups()
            keeping = name.lower() in ("comment", "license", "disclaimer")
            lines.append("")
            if name.lower() == "license" and value.strip():
                lines += [f"License: {value.strip()}", ""]
            elif keeping and value.strip():
                lines.append(value)
        elif not line.strip():
            keeping = True
            lines.append("")
        elif keeping and not _HOLDER.match(line):
            lines.append("" if line.strip() == "." else line[1:] if line.startswith(" ") else line)
    return clean_markup("\n".join(lines))


def _set_aside_code(text: str, code: list[str]) -> str:
    """Fenced code blocks of at most MAX_CODE_LINES lines moved to `code`, each replaced by a
    paragraph naming its index there; longer ones removed."""
    def keep(match: re.Match) -> str:
        body = match.group(2).strip("\n")
        if body.count("\n") >= MAX_CODE_LINES or not body.strip():
            return "\n"
        code.append(f"```{match.group(1)}\n{body}\n```")
        return f"\n\n\x00{len(code) - 1}\x00\n\n"
    return re.sub(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", keep, text, flags=re.S | re.M)


def _drop_directives(text: str) -> str:
    """reStructuredText directives and comments (`.. name::` and what is indented under them)
    and literal blocks after `::`, removed."""
    out, skipping = [], False
    for line in text.split("\n"):
        if skipping and (not line.strip() or line.startswith((" ", "\t"))):
            continue
        skipping = False
        if _DIRECTIVE.match(line):
            skipping = True
            continue
        out.append(line[:-1] if line.endswith("::") else line)
        skipping = line.rstrip().endswith("::") and not line.strip() == "::"
        if skipping:
            out.append("")
    return "\n".join(out)


def _paragraphs(lines: list[str]) -> list[str]:
    paragraphs, block = [], []
    for line in [*lines, ""]:
        if line.strip():
            block.append(line)
        elif block:
            paragraph = _join(block)
            if paragraph:
                paragraphs.append(paragraph)
            block = []
    return paragraphs


def _join(block: list[str]) -> str:
    """One paragraph's lines as clean text ("" if it is noise: code, symbols, a stray fragment)."""
    if block[0].startswith("\x00"):
        return block[0]
    if sum(bool(_CODE_LINE.search(line)) for line in block) * 2 > len(block):
        return ""
    items: list[str] = []
    for line in block:
        if _LIST_ITEM.match(line) or not items:
            items.append(line.strip())
        else:
            items[-1] += " " + line.strip()
    listed = len(items) > 1 and all(_LIST_ITEM.match(item) for item in items[1:])
    text = "\n".join(items) if listed else " ".join(items)
    text = re.sub(r"[ \u00a0]{2,}", " ", text).strip()
    letters = len(_NOT_LETTER.sub("", text))
    if "\ufffd" in text or letters < 0.8 * len(text) or len(text.split()) < 3 and not is_heading(text):
        return ""
    return text


def is_heading(paragraph: str) -> bool:
    """Whether a paragraph is a heading: one short line not ending like a sentence."""
    return ("\n" not in paragraph and 2 <= len(paragraph) <= 70 and not paragraph.endswith((".", ",", ";", ":"))
            and len(paragraph.split()) <= 9 and paragraph[:1].isalnum())
