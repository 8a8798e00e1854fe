"""Writes docs/flags.md, every flag of every run script and eval_agent by group, from the scripts' own `--help`.

    .venv/bin/python docs/generate_flags.py            # rewrite docs/flags.md
    .venv/bin/python docs/generate_flags.py --check    # exit 1 if docs/flags.md is not what it would write

Each script is imported in this process, one after another (its flags are defined in absl's FLAGS, then removed
again), and its `--help` text (`deep_rl_zoo.flags.help_text`, what `python -m <script> --help` prints) is parsed into
groups of (flag, default, meaning). The page has one table per group shared by every run script (environment,
training, actors and learner, logging, checkpoints) with the default most scripts use, one table per agent with its
own flags and the defaults each of its scripts sets where they differ, and one for eval_agent.
`unit_tests/docs_flags_test.py` fails when a flag, a default or a help text changed and the page was not rewritten.
"""

import argparse
import collections
import glob
import os
import re
import subprocess
import sys
from typing import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, 'docs', 'flags.md')
FLAG_LINE = re.compile(r'^  --(\w+)=(.*?)(?: {1,}(.*))?$')  # `  --name=default   help` (help_text pads to 40)
SHARED_THEMES = ('environment', 'training', 'actors and learner', 'logging', 'checkpoints')
SCRIPT_ORDER = ('run_classic', 'run_atari', 'run_continuous', 'run_classic_grad', 'run_atari_grad')


def script_modules() -> list[str]:
    """Every run script and eval_agent of the agent packages, as module names, sorted by package."""
    paths = glob.glob(os.path.join(ROOT, 'deep_rl_zoo', '*', 'run_*.py')) + glob.glob(os.path.join(ROOT, 'deep_rl_zoo', '*', 'eval_agent.py'))
    return sorted('deep_rl_zoo.' + os.path.relpath(path, os.path.join(ROOT, 'deep_rl_zoo'))[:-3].replace(os.sep, '.') for path in paths)


def help_texts(modules: list[str]) -> Iterator[tuple[str, str]]:
    """(module, its --help text) for each module, imported in this process one after another."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from deep_rl_zoo import flags as flags_lib

    for name in modules:
        if name in sys.modules:  # imported already, so its flags are defined: ask a fresh interpreter instead
            yield name, subprocess.run([sys.executable, '-m', name, '--help'], cwd=ROOT, capture_output=True, text=True, check=True).stdout.rstrip('\n')
            continue
        with flags_lib.script_flags(name) as module:
            yield name, flags_lib.help_text(module.__doc__ or '')


def parse_help(text: str) -> dict[str, dict[str, tuple[str, str]]]:
    """theme -> flag -> (default as typed, meaning), from a --help text."""
    themes: dict[str, dict[str, tuple[str, str]]] = {}
    theme = None
    for line in text.splitlines():
        if line and not line.startswith(' ') and line.endswith(':') and not line.startswith('Flags ('):
            theme = line[:-1]
            themes[theme] = {}
            continue
        match = FLAG_LINE.match(line)
        if match and theme is not None:
            name, default, meaning = match.group(1), match.group(2).strip(), (match.group(3) or '').strip()
            themes[theme][name] = (default, meaning)
    return themes


def cell(text: str) -> str:
    """Text for a Markdown table cell."""
    text = re.sub(r'^<([\w|]+)>: ', lambda match: '(' + ', '.join(f'`{value}`' for value in match.group(1).split('|')) + ') ', text)
    parts = re.split(r'(`[^`]*`)', text)  # leave code spans as they are
    parts = [part if part.startswith('`') else part.replace('\\', '\\\\').replace('*', '\\*').replace('<', '&lt;').replace('_', '\\_') for part in parts]
    return ''.join(parts).replace('|', '\\|')


def code(default: str) -> str:
    return f'`{default}`' if default else ''


def render(helps: dict[str, dict[str, dict[str, tuple[str, str]]]]) -> str:
    runs = {module: themes for module, themes in helps.items() if not module.endswith('.eval_agent')}
    evals = {module: themes for module, themes in helps.items() if module.endswith('.eval_agent')}
    package_of = lambda module: module.split('.')[1]  # noqa: E731
    script_of = lambda module: module.split('.')[2]  # noqa: E731

    # The shared groups: each flag's meaning and the default most run scripts use.
    shared: dict[str, dict[str, collections.Counter]] = {theme: {} for theme in SHARED_THEMES}
    for module, themes in runs.items():
        for theme in SHARED_THEMES:
            for name, (default, meaning) in themes.get(theme, {}).items():
                shared[theme].setdefault(name, collections.Counter())[default] += 1
    usual = {name: max(sorted(counts), key=lambda value: counts[value]) for theme in SHARED_THEMES for name, counts in shared[theme].items()}
    meanings: dict[tuple[str, str], str] = {}  # the meaning a script with the usual default gives
    for module, themes in runs.items():
        for theme in SHARED_THEMES:
            for name, (default, meaning) in themes.get(theme, {}).items():
                if default == usual[name]:
                    meanings.setdefault((theme, name), meaning)
    total = len(runs)

    lines = [
        '# Flags',
        '',
        '<!-- Generated by docs/generate_flags.py from the run scripts\' --help; do not edit by hand. After changing a flag,',
        '     its default or its help, run: .venv/bin/python docs/generate_flags.py -->',
        '',
        'Every flag of every run script and `eval_agent`, by group, as their `--help` prints it. Each flag is defined once, in',
        '`deep_rl_zoo/flags.py`; a run script only sets its own defaults. `python -m deep_rl_zoo.<agent>.<script> --help`',
        'lists that script\'s own flags by group with its defaults and exits 0 (`--helpfull` adds absl\'s own).',
        'Flags are written `--name=value`; booleans also `--name` / `--noname`. Bad values stop the run with one line',
        'naming the flag. A preset (`--preset`, [Training](training.md#run-scripts-settings-and-presets)) may set other values for',
        'its task, and it says which when the run starts.',
        '',
        'The first tables hold the groups every run script shares, with the default most scripts use; a script that sets',
        'another default lists it in its agent\'s table, which also holds the agent\'s own flags.',
        '',
    ]
    for theme in SHARED_THEMES:
        if not shared[theme]:
            continue
        lines += [f'## {theme.capitalize()}', '', '| flag | default | scripts | meaning |', '|---|---|---|---|']
        for name in sorted(shared[theme]):
            count = sum(shared[theme][name].values())
            scripts = 'all' if count == total else f'{count} of {total}'
            varies = ' (most scripts)' if len(shared[theme][name]) > 1 else ''
            lines.append(f'| `--{name}` | {code(usual[name])}{varies} | {scripts} | {cell(meanings[(theme, name)])} |')
        lines.append('')

    lines += ['## Agents', '', 'Each agent\'s own flags, and the shared ones one of its scripts sets to another default, with the default of',
              'each script (`-`: that script has no such flag).', '']
    by_package: dict[str, list[str]] = collections.defaultdict(list)
    for module in runs:
        by_package[package_of(module)].append(module)
    for package in sorted(by_package):
        modules = sorted(by_package[package], key=lambda module: SCRIPT_ORDER.index(script_of(module)) if script_of(module) in SCRIPT_ORDER else 99)
        rows: dict[str, dict[str, str]] = {}
        own_meaning: dict[str, str] = {}
        for module in modules:
            for theme, flags in runs[module].items():
                for name, (default, meaning) in flags.items():
                    if theme in SHARED_THEMES and default == usual.get(name):
                        continue
                    rows.setdefault(name, {})[module] = default
                    own_meaning.setdefault(name, meaning)
        lines += [f'### {package}', '']
        if not rows:
            lines += ['No flags of its own; the shared defaults.', '']
            continue
        header = ' | '.join(f'`{script_of(module)}`' for module in modules)
        lines += [f'| flag | {header} | meaning |', '|---|' + '---|' * len(modules) + '---|']
        defaults = {module: {name: default for flags in runs[module].values() for name, (default, _) in flags.items()} for module in modules}
        for name in sorted(rows):  # every script's default of the flag ('-': the script has no such flag)
            values = ' | '.join(code(defaults[module][name]) if name in defaults[module] else '-' for module in modules)
            lines.append(f'| `--{name}` | {values} | {cell(own_meaning[name])} |')
        lines.append('')

    lines += ['## Evaluation (`eval_agent`)', '',
              '`python -m deep_rl_zoo.<agent>.eval_agent` takes these; the environment and its settings come from the checkpoint.', '',
              '| flag | default | agents | meaning |', '|---|---|---|---|']
    evaluation: dict[str, dict[str, str]] = {}
    eval_meaning: dict[str, str] = {}
    for module, themes in evals.items():
        for theme, flags in themes.items():
            for name, (default, meaning) in flags.items():
                evaluation.setdefault(name, {})[package_of(module)] = default
                eval_meaning.setdefault(name, meaning)
    for name in sorted(evaluation):
        by_default: dict[str, list[str]] = collections.defaultdict(list)
        for package, default in sorted(evaluation[name].items()):
            by_default[default].append(package)
        agents = 'all' if len(evaluation[name]) == len(evals) else ', '.join(sorted(evaluation[name]))
        if len(by_default) == 1:
            default_cell = code(next(iter(by_default)))
        else:
            default_cell = '; '.join(f'{code(default)} ({", ".join(packages)})' for default, packages in sorted(by_default.items()))
        lines.append(f'| `--{name}` | {default_cell} | {agents} | {cell(eval_meaning[name])} |')
    lines.append('')
    return '\n'.join(lines)


def generate() -> str:
    modules = script_modules()
    return render({module: parse_help(text) for module, text in help_texts(modules)})


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--check', action='store_true', help='exit 1 if docs/flags.md is out of date, without writing it')
    arguments = parser.parse_args(argv)
    page = generate()
    current = open(PAGE, encoding='utf-8').read() if os.path.exists(PAGE) else ''
    if arguments.check:
        if page != current:
            print('docs/flags.md is out of date: run .venv/bin/python docs/generate_flags.py', file=sys.stderr)
            return 1
        return 0
    if page != current:
        with open(PAGE, 'w', encoding='utf-8') as file:
            file.write(page)
    print(f'docs/flags.md: {page.count(chr(10))} lines')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
