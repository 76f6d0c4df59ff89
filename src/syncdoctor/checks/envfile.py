"""Read ``--env-file`` scripts and NCCL's config files the way a shell and NCCL would.

- :func:`parse_env_file` (pure): a file of ``export K=V`` lines or a job script. A small shell lexer
  handles comments, single/double quotes, backslashes, continuation lines, ``export``/``declare -x``/
  ``env``/``setenv`` and assignments prefixed to a command (``NCCL_DEBUG=INFO torchrun ...``). ``$VAR`` and
  ``${VAR:-default}`` expand from earlier assignments in the file; values that depend on anything else
  are left out and reported (E432). Malformed lines become findings (E431), never exceptions.
- :func:`parse_nccl_conf` (pure): NCCL's own reader (src/misc/param.cc ``setEnvFile``): name = text before
  the first '=', value = the rest, no trimming, no quotes, '#' only in column 0 (E433 for lines that
  look different from what NCCL reads).
- :func:`read_nccl_conf` / :func:`load_nccl_conf` (file I/O under the given paths): NCCL_CONF_FILE (since
  2.23) or else ``<home>/.nccl.conf``, then ``<etc>/nccl.conf``, applied with ``setenv(..., 0)``: the real
  environment wins, then the user file, then /etc/nccl.conf.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from syncdoctor.checks.values import parse_version, version_at_least
from syncdoctor.kb import Finding, Severity
from syncdoctor.kb.pages import env as pages
from syncdoctor.redact import REDACTED, is_secret_name, redact_text, remember_secrets

__all__ = ["NcclConf", "load_nccl_conf", "parse_env_file", "parse_nccl_conf", "read_nccl_conf"]

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=")
_MAX_CONF_BYTES = 1 << 20


@dataclass
class _Word:
    text: str = ""
    unresolved: list[str] = field(default_factory=list)
    quoted: bool = False  # any part was quoted (so an '=' inside quotes is not an assignment)
    raw: str = ""


@dataclass
class _Command:
    line: int
    words: list[_Word]
    source: str
    error: str | None = None


class _Lexer:
    """Split shell text into simple commands of words, expanding what can be expanded."""

    def __init__(self, text: str, scope: Mapping[str, str | None]) -> None:
        self.text, self.scope, self.pos, self.line = text, scope, 0, 1

    def commands(self) -> Iterator[_Command]:
        while self.pos < len(self.text):
            yield self._command()

    def _peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def _command(self) -> _Command:
        start_line, start = self.line, self.pos
        words: list[_Word] = []
        error: str | None = None
        while self.pos < len(self.text):
            c = self._peek()
            if c == "\n":
                self.pos += 1
                self.line += 1
                if words or error:
                    break
                start_line, start = self.line, self.pos
                continue
            if c in " \t":
                self.pos += 1
            elif c == "#":
                while self.pos < len(self.text) and self._peek() != "\n":
                    self.pos += 1
            elif c in ";&|":
                self.pos += 1
                while self._peek() and self._peek() in ";&|":
                    self.pos += 1
                if words:
                    break
            elif c == "\\" and self._peek(1) == "\n":
                self.pos += 2
                self.line += 1
            else:
                word, error = self._word()
                words.append(word)
                if error:
                    while self.pos < len(self.text) and self._peek() != "\n":
                        self.pos += 1
        return _Command(start_line, words, self.text[start:self.pos].rstrip("\n"), error)

    def _word(self) -> tuple[_Word, str | None]:
        word = _Word()
        begin = self.pos
        while self.pos < len(self.text):
            c = self._peek()
            if c in " \t\n;&|":
                break
            if c == "\\":
                nxt = self._peek(1)
                if nxt == "\n":
                    self.pos += 2
                    self.line += 1
                    continue
                word.text += nxt
                self.pos += 2
            elif c == "'":
                end = self.text.find("'", self.pos + 1)
                if end < 0:
                    return word, "unterminated single quote"
                chunk = self.text[self.pos + 1:end]
                self.line += chunk.count("\n")
                word.text += chunk
                word.quoted = True
                self.pos = end + 1
            elif c == '"':
                error = self._double(word)
                if error:
                    return word, error
            elif c == "$" or c == "`":
                self._expansion(word)
            else:
                word.text += c
                self.pos += 1
        word.raw = self.text[begin:self.pos]
        return word, None

    def _double(self, word: _Word) -> str | None:
        word.quoted = True
        self.pos += 1
        while self.pos < len(self.text):
            c = self._peek()
            if c == '"':
                self.pos += 1
                return None
            if c == "\\" and self._peek(1) and self._peek(1) in '$`"\\\n':
                if self._peek(1) == "\n":
                    self.line += 1
                else:
                    word.text += self._peek(1)
                self.pos += 2
            elif c in "$`":
                self._expansion(word)
            else:
                if c == "\n":
                    self.line += 1
                word.text += c
                self.pos += 1
        return "unterminated double quote"

    def _expansion(self, word: _Word) -> None:
        if self._peek() == "`":
            end = self.text.find("`", self.pos + 1)
            end = len(self.text) - 1 if end < 0 else end
            word.unresolved.append(self.text[self.pos:end + 1])
            self.pos = end + 1
            return
        nxt = self._peek(1)
        if nxt == "(":
            depth, i = 0, self.pos + 1
            while i < len(self.text):
                depth += {"(": 1, ")": -1}.get(self.text[i], 0)
                if depth == 0:
                    break
                i += 1
            word.unresolved.append(self.text[self.pos:i + 1])
            self.pos = i + 1
        elif nxt == "{":
            end = self.text.find("}", self.pos)
            end = len(self.text) - 1 if end < 0 else end
            body = self.text[self.pos + 2:end]
            self.pos = end + 1
            self._substitute(word, body)
        else:
            match = re.match(r"[A-Za-z_][A-Za-z0-9_]*", self.text[self.pos + 1:])
            if match:
                self.pos += 1 + len(match.group(0))
                self._substitute(word, match.group(0))
            elif nxt and (nxt.isdecimal() or nxt in "@*#?$!-"):
                word.unresolved.append("$" + nxt)
                self.pos += 2
            else:
                word.text += "$"
                self.pos += 1

    def _substitute(self, word: _Word, body: str) -> None:
        match = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)(:?-(.*))?$", body, re.S)
        if not match:
            word.unresolved.append("${" + body + "}")
            return
        name, default = match.group(1), match.group(3)
        value = self.scope.get(name)
        colon = (match.group(2) or "").startswith(":")
        if value is not None and not (colon and value == ""):
            word.text += value
        elif default is not None and (name not in self.scope or colon):
            word.text += default
        else:
            word.unresolved.append("$" + name)


def _show_line(source: str) -> str:
    return redact_text(source.strip())[:200]


def parse_env_file(text: str) -> tuple[dict[str, str], list[Finding]]:
    """Assignments a shell would make when running ``text``, and findings for malformed lines.

    Returns (variables, findings). Variables whose values cannot be known in advance are omitted and
    reported (E432). Never raises.
    """
    values: dict[str, str] = {}
    scope: dict[str, str | None] = {}
    findings: list[Finding] = []
    if "\r\n" in text:
        findings.append(pages.ENV_FILE_MALFORMED.finding(
            "the file has Windows (CRLF) line endings: a shell keeps the carriage return at the end of every value",
            evidence={"line": text[:text.index("\r\n")].count("\n") + 1}, fix="convert it: dos2unix FILE", key="crlf"))
    for command in _Lexer(text, scope).commands():
        if command.error:
            findings.append(_malformed(command, f"{command.error}: the shell would fail here"))
            continue
        for name, word in _assignments(command, findings):
            if word.unresolved:
                scope[name] = None
                values.pop(name, None)
                findings.append(pages.ENV_FILE_UNRESOLVED.finding(
                    f"line {command.line}: {name} depends on {', '.join(word.unresolved)}, which the file does not "
                    "define: not validated", evidence={"line": command.line, "text": _show_line(command.source)},
                    key=f"{name}:{command.line}"))
                continue
            scope[name] = word.text
            values[name] = word.text
    remember_secrets(values)  # their values are redacted wherever they appear in output, under any name
    return values, findings


def _malformed(command: _Command, problem: str) -> Finding:
    return pages.ENV_FILE_MALFORMED.finding(
        f"line {command.line}: {problem}", evidence={"line": command.line, "text": _show_line(command.source)},
        key=f"{command.line}:{problem}")


def _looks_like_ours(name: str) -> bool:
    from syncdoctor.checks.envvars import is_known

    return is_known(name) or name.upper().startswith(("NCCL_", "TORCH_", "GLOO_", "MASTER_"))


def _assignments(command: _Command, findings: list[Finding]) -> Iterator[tuple[str, _Word]]:
    words = command.words
    if not words:
        return
    head = words[0].text if not words[0].quoted else ""
    if head in ("export", "declare", "typeset", "readonly", "local"):
        if head != "export" and not any(w.text.startswith("-") and "x" in w.text for w in words[1:]):
            return
        for word in words[1:]:
            if word.text.startswith("-"):
                continue
            name, sep, _ = word.text.partition("=")
            if not _NAME.match(name):
                findings.append(_malformed(command, f"{name!r} is not a valid variable name"))
            elif sep:
                yield name, _value_of(word, name)
        return
    if head == "setenv" and len(words) >= 2:
        if _NAME.match(words[1].text):
            yield words[1].text, words[2] if len(words) > 2 else _Word()
        return
    start = 1 if head == "env" else 0
    for index in range(start, len(words)):
        word = words[index]
        match = _ASSIGN.match(word.raw) if not word.raw.startswith(("'", '"')) else None
        if match is None:
            _check_command_word(command, words, index, findings)
            return
        name = match.group(1)
        value = _value_of(word, name)
        if value.text == "" and not value.unresolved and index + 1 < len(words) and _looks_like_ours(name) \
                and word.raw == f"{name}=":
            findings.append(_malformed(command, f"blank after '=': {name} is set to '' and "
                                                f"{words[index + 1].text!r} runs as a command"))
        yield name, value


def _value_of(word: _Word, name: str) -> _Word:
    prefix = len(name) + 1
    return _Word(word.text[prefix:], list(word.unresolved), word.quoted, word.raw[prefix:])


def _check_command_word(command: _Command, words: list[_Word], index: int, findings: list[Finding]) -> None:
    """A command position: flag what looks like a broken assignment to one of our variables."""
    word = words[index]
    name, sep, _ = word.raw.partition("=")
    if sep and name and not _NAME.match(name) and _looks_like_ours(name.replace("-", "_")):
        findings.append(_malformed(command, f"{name!r} is not a valid variable name"))
    elif _NAME.match(word.text) and _looks_like_ours(word.text) and index + 1 < len(words) \
            and words[index + 1].raw.startswith("="):
        findings.append(_malformed(command, f"blanks around '=': the shell runs a command named {word.text!r} "
                                            f"instead of setting it (write {word.text}=...)"))


# ------------------------------------------------------------------------------------ NCCL config files
@dataclass(frozen=True)
class NcclConf:
    """The environment NCCL ends up with after its config files, and how it got there.

    Attributes:
        env: the effective variables (environment first, then the files, as NCCL applies them).
        sources: variable -> "environment" or the path of the file that set it.
        findings: E433/E434/E435 findings about the files.
        files: the files NCCL would read, in order, with whether each was found.
    """

    env: dict[str, str]
    sources: dict[str, str]
    findings: list[Finding]
    files: list[tuple[str, bool]]


def _is_secret(name: str) -> bool:
    from syncdoctor.checks.envvars import lookup

    variable = lookup(name.strip())
    return is_secret_name(name) or (variable is not None and variable.secret)


def _show_value(name: str, value: str) -> str:
    return REDACTED if _is_secret(name) else value


def parse_nccl_conf(text: str, *, origin: str = "nccl.conf") -> tuple[list[tuple[str, str]], list[Finding]]:
    """(name, value) pairs NCCL applies from a config file, in order, and findings for misread lines."""
    pairs: list[tuple[str, str]] = []
    findings: list[Finding] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        name, value = name[:1023], value[:1023]
        bare = name.strip()
        real_name = bare.split()[-1] if bare.split() else bare
        shown = f"{name}={REDACTED}" if sep and _is_secret(real_name) else redact_text(line.rstrip("\r"))[:200]
        value_shown = _show_value(real_name, value)

        def misread(problem: str, fix: str, key: str, severity: Severity | None = None,
                    number: int = number, shown: str = shown) -> None:
            findings.append(pages.NCCL_CONF_MISREAD.finding(
                f"{origin} line {number}: {problem}", evidence={"file": origin, "line": number, "text": shown},
                fix=fix, severity=severity, key=f"{origin}:{number}:{key}"))

        if not sep:
            if line.strip():
                misread("no '=': NCCL skips the line", f"write NAME=value on line {number}", "no-equals",
                        Severity.WARNING)
            continue
        if bare.startswith("#"):
            misread("an indented '#' does not start a comment for NCCL (only column 0 does); the line sets a "
                    "variable nobody reads", f"move the '#' to column 0 on line {number}", "indented-comment",
                    Severity.WARNING)
            continue
        if bare.startswith(("export ", "export\t")):
            real = bare.split(None, 1)[1].strip() if len(bare.split(None, 1)) > 1 else ""
            misread(f"NCCL reads the name as {name!r}: 'export' is not understood, so {real or 'the variable'} is not set",
                    f"write {real}={value_shown.strip()}", "export")
            continue
        if not name:
            misread("empty name: NCCL cannot set it", f"remove line {number}", "empty-name", Severity.WARNING)
            continue
        if name != bare or not _NAME.match(name):
            misread(f"NCCL reads the name as {name!r} (no trimming), so {bare or 'the variable'} is not set",
                    f"write {bare}={value_shown.strip()} without blanks", "name")
            continue
        pairs.append((name, value))
        if value.endswith("\r"):
            misread(f"{name}'s value ends with a carriage return (CRLF file): NCCL keeps it",
                    f"convert the file: dos2unix {origin}", "crlf")
            value = value[:-1]
        if value != value.strip(" \t"):
            misread(f"{name}'s value has blanks around it and NCCL keeps them: {_show_value(name, value)!r}",
                    f"write {name}={_show_value(name, value.strip())}", "blanks")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            misread(f"{name}'s value keeps its quotes: NCCL reads {_show_value(name, value)!r}",
                    f"write {name}={_show_value(name, value[1:-1])}", "quotes")
    return pairs, findings


def _read(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            return handle.read(_MAX_CONF_BYTES).decode("utf-8", errors="replace")
    except OSError as exc:
        log.debug("cannot read %s: %s", path, exc)
        return None


def read_nccl_conf(
    env: Mapping[str, str],
    *,
    home: Path | None,
    etc: Path,
    nccl_version: str | None = None,
    cwd: Path | None = None,
) -> NcclConf:
    """Apply NCCL's config files to ``env`` with NCCL's precedence (reads files; never raises).

    Args:
        env: the real environment (wins over every file).
        home: the user's home directory (NCCL uses getpwuid's home, not $HOME); None if unknown.
        etc: the directory holding nccl.conf (``Path("/etc")`` on a real host), or the file itself.
        nccl_version: NCCL_CONF_FILE is honoured since 2.23; None = assume a current NCCL.
        cwd: base of a relative NCCL_CONF_FILE (default: the current directory).
    """
    effective = {str(k): str(v) for k, v in env.items()}
    sources = dict.fromkeys(effective, "environment")
    findings: list[Finding] = []
    files: list[tuple[Path, bool]] = []
    conf_file = env.get("NCCL_CONF_FILE") or ""
    honoured = version_at_least(parse_version(nccl_version), "2.23") is not False
    if conf_file and not honoured:
        findings.append(pages.NCCL_CONF_UNREADABLE.finding(
            f"NCCL_CONF_FILE={conf_file} is ignored by NCCL {nccl_version}: it exists since 2.23; "
            "NCCL reads ~/.nccl.conf instead", evidence={"NCCL_CONF_FILE": conf_file, "nccl_version": nccl_version},
            fix=f"copy the settings to {home / '.nccl.conf' if home else '~/.nccl.conf'}", key="NCCL_CONF_FILE"))
    if conf_file and honoured:
        path = Path(conf_file)
        files.append(((cwd or Path.cwd()) / path if not path.is_absolute() else path, True))
    elif home is not None:
        files.append((home / ".nccl.conf", False))
    files.append((etc if etc.name == "nccl.conf" else etc / "nccl.conf", False))
    found: list[tuple[str, bool]] = []
    for path, explicit in files:
        text = _read(path)
        found.append((str(path), text is not None))
        if text is None:
            if explicit:
                tilde = " ('~' is not expanded)" if "~" in conf_file else ""
                findings.append(pages.NCCL_CONF_UNREADABLE.finding(
                    f"NCCL_CONF_FILE={conf_file} cannot be read{tilde}: NCCL skips it silently",
                    evidence={"NCCL_CONF_FILE": conf_file, "path": str(path)},
                    fix="export NCCL_CONF_FILE=<absolute path of an existing file>", key="NCCL_CONF_FILE"))
            continue
        pairs, problems = parse_nccl_conf(text, origin=str(path))
        findings.extend(problems)
        for name, value in pairs:
            if name in effective:
                if effective[name] != value:
                    findings.append(pages.NCCL_CONF_SHADOWED.finding(
                        f"{path}: {name}={_show_value(name, value)} is overridden by {sources[name]} "
                        f"({name}={_show_value(name, effective[name])})",
                        evidence={"file": str(path), "variable": name, "winner": sources[name]},
                        fix=f"nothing, if intended; otherwise change it where it is set ({sources[name]})",
                        key=f"{path}:{name}"))
                continue
            effective[name] = value
            sources[name] = str(path)
    return NcclConf(effective, sources, findings, found)


def load_nccl_conf(env: Mapping[str, str], *, home: Path, etc: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The effective environment after NCCL's config files, and where each variable came from.

    See :func:`read_nccl_conf`, which also returns findings about the files.
    """
    conf = read_nccl_conf(env, home=home, etc=etc)
    return conf.env, conf.sources
