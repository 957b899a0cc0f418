"""``modelwire completion bash|zsh|fish``: each script, printed by the real command, is
loaded in its shell and asked to complete — commands and aliases, a command's flags,
a flag's choices, ``-o`` keys, a positional's choices. bash is always there; zsh and
fish are run when installed (CI installs them) and skipped, saying so, otherwise."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from test_cli import assert_one_line_error, cli

# (words typed so far, the last one being completed) -> what must be offered, exactly.
CASES = [
    (["modelwire", "ch"], ["chat"]),
    (["modelwire", "pro"], ["prompt"]),
    (["modelwire", "comp"], ["completion"]),
    (["modelwire", "chat", "--sch"], ["--schema", "--schema-multi"]),
    (["modelwire", "prompt", "--schema-m"], ["--schema-multi"]),
    (["modelwire", "chat", "--api", "openai-r"], ["openai-responses"]),
    (["modelwire", "run", "--reasoning", "h"], ["high"]),
    (["modelwire", "chat", "-o", "temp"], ["temperature"]),
    (["modelwire", "completion", ""], ["bash", "fish", "zsh"]),
    (["modelwire", "logs", "--to"], ["--totals"]),
]


def _script(shell: str, tmp_path: Path) -> Path:
    proc = cli("completion", shell)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    path = tmp_path / f"modelwire.{shell}"
    path.write_text(proc.stdout, encoding="utf-8")
    return path


def _shell(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (CI installs it: .ci/run)")
    return found


def test_a_shell_outside_the_choices_is_a_usage_error() -> None:
    assert_one_line_error(cli("completion", "tcsh"), "usage", "invalid choice: 'tcsh'")


# --------------------------------------------------------------------------- bash

_BASH = r"""
source "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
_modelwire modelwire "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
complete -p modelwire
"""


@pytest.mark.parametrize(("words", "expected"), CASES, ids=[" ".join(w) for w, _ in CASES])
def test_bash_completes(words: list[str], expected: list[str], tmp_path: Path) -> None:
    script = _script("bash", tmp_path)
    proc = subprocess.run([_shell("bash"), "-c", _BASH, "bash", str(script), *words],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    *offered, registered = proc.stdout.splitlines()
    assert sorted(w for w in offered if w) == expected
    assert registered == "complete -o default -F _modelwire modelwire"


def test_bash_offers_nothing_for_a_value_it_cannot_know(tmp_path: Path) -> None:
    script = _script("bash", tmp_path)
    for words in (["modelwire", "chat", "-m", ""], ["modelwire", "chat", "-o", "temperature", ""]):
        proc = subprocess.run([_shell("bash"), "-c", _BASH, "bash", str(script), *words],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert [w for w in proc.stdout.splitlines()[:-1] if w] == [], words


# --------------------------------------------------------------------------- zsh

# A real interactive zsh on a pseudo-terminal (zpty): compinit, the script sourced,
# compadd wrapped to print each candidate, then the words and a Tab.
_ZSH = r"""
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z 'PS1=""; autoload -U compinit && compinit -u -D'
zpty -w z "source ${(q)1}"
zpty -w z 'compadd () { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi; typeset -a hits; builtin compadd -A hits "$@"; (( $#hits )) || return 1; local h; for h in $hits; do print -r -- "<hit>$h</hit>"; done; }'
zpty -w z 'print -r -- "<rea""dy>"'
zpty -r z line '*<ready>*'
zpty -w -n z "$2"$'\t'
out=""
integer tries=0 idle=0
# The first candidate (up to 2 minutes: a loaded machine is slow), then the rest, which
# the same loop prints at once; only then the line is cleared and the end marked.
while (( tries++ < 2400 )); do
  if zpty -r -t z line 2>/dev/null; then out+="$line"; else sleep 0.05; fi
  [[ $out == *'</hit>'* ]] && break
done
while (( idle++ < 10 )); do
  if zpty -r -t z line 2>/dev/null; then out+="$line"; idle=0; else sleep 0.05; fi
done
zpty -w z $'\C-u print -r -- "<do""ne>"'
while (( tries++ < 4800 )); do
  if zpty -r -t z line 2>/dev/null; then out+="$line"; else sleep 0.05; fi
  [[ $out == *'<done>'* ]] && break
done
zpty -d z
print -r -- "$out"
"""


def test_zsh_script_parses(tmp_path: Path) -> None:
    proc = subprocess.run([_shell("zsh"), "-n", str(_script("zsh", tmp_path))],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.parametrize(("words", "expected"), CASES, ids=[" ".join(w) for w, _ in CASES])
def test_zsh_completes(words: list[str], expected: list[str], tmp_path: Path) -> None:
    import re

    script = _script("zsh", tmp_path)
    proc = subprocess.run([_shell("zsh"), "-f", "-c", _ZSH, "zsh", str(script), " ".join(words)],
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert "<done>" in proc.stdout, proc.stdout + proc.stderr
    assert sorted(set(re.findall(r"<hit>([^<]*)</hit>", proc.stdout))) == expected


# --------------------------------------------------------------------------- fish


def test_fish_script_parses(tmp_path: Path) -> None:
    proc = subprocess.run([_shell("fish"), "-n", str(_script("fish", tmp_path))],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.parametrize(("words", "expected"), CASES, ids=[" ".join(w) for w, _ in CASES])
def test_fish_completes(words: list[str], expected: list[str], tmp_path: Path) -> None:
    script = _script("fish", tmp_path)
    line = " ".join(words)
    proc = subprocess.run(
        [_shell("fish"), "--no-config", "-c", "source $argv[1]; complete -C $argv[2]",
         str(script), line],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    offered = sorted(out.split("\t", 1)[0] for out in proc.stdout.splitlines())
    assert offered == expected
