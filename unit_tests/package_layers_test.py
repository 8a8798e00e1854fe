"""The layers of the package: the core (`deep_rl_zoo/*.py`, `deep_rl_zoo/networks/`) imports no agent package, and an
agent package imports the core and at most the one agent it extends (`EXTENDS`), without cycles. Imports are read
from every module's syntax tree (those inside functions too), so a test runs no agent code."""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / 'deep_rl_zoo'
CORE_PACKAGES = {'networks'}

# agent -> the one agent it extends (its learner, network or tuned settings are that agent's, with changes).
EXTENDS = {
    'double_dqn': 'dqn',
    'prioritized_dqn': 'dqn',
    'c51_dqn': 'dqn',
    'qr_dqn': 'dqn',
    'iqn': 'dqn',
    'rainbow': 'c51_dqn',
    'ngu': 'r2d2',
    'agent57': 'ngu',
    'ppo_icm': 'ppo',
    'ppo_rnd': 'ppo',
    'reinforce_baseline': 'reinforce',
}


def agent_packages() -> set[str]:
    return {path.parent.name for path in PACKAGE.glob('*/__init__.py')} - CORE_PACKAGES


def imported_modules(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import of `deep_rl_zoo` in the file; `from deep_rl_zoo import x` counts as
    module `deep_rl_zoo.x`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == 'deep_rl_zoo':
                found += [(node.lineno, f'deep_rl_zoo.{alias.name}') for alias in node.names]
            else:
                found.append((node.lineno, node.module))
    return [(line, module) for line, module in found if module.startswith('deep_rl_zoo.')]


def package_imports() -> list[tuple[str, str | None, str, str]]:
    """(file, importing agent or None for the core, imported agent, line) of every import of an agent package."""
    agents = agent_packages()
    edges = []
    for path in sorted(PACKAGE.rglob('*.py')):
        parts = path.relative_to(PACKAGE).parts
        source = parts[0] if len(parts) > 1 and parts[0] in agents else None
        for line, module in imported_modules(path):
            target = module.split('.')[1]
            if target in agents and target != source:
                edges.append((f'{path.relative_to(PACKAGE.parent)}:{line}', source, target, module))
    return edges


def test_the_declared_agents_exist():
    agents = agent_packages()
    assert set(EXTENDS) | set(EXTENDS.values()) <= agents


@pytest.mark.slow
def test_the_core_imports_no_agent():
    upward = [f'{where} imports {module}' for where, source, _, module in package_imports() if source is None]
    assert not upward, 'the core must not import an agent package:\n' + '\n'.join(upward)


def test_agents_import_only_the_agent_they_extend():
    undeclared = [
        f'{where}: {source} imports {module}'
        for where, source, target, module in package_imports()
        if source is not None and EXTENDS.get(source) != target
    ]
    assert not undeclared, 'an agent imports the core and at most the agent it extends (EXTENDS):\n' + '\n'.join(undeclared)


def test_the_declared_extensions_have_no_cycle():
    for agent in EXTENDS:
        seen = [agent]
        while seen[-1] in EXTENDS:
            seen.append(EXTENDS[seen[-1]])
            assert seen.count(seen[-1]) == 1, f'cycle: {" -> ".join(seen)}'


@pytest.mark.parametrize('source', ['import deep_rl_zoo.ppo.agent', 'from deep_rl_zoo import ppo', 'from deep_rl_zoo.ppo.agent import x'])
def test_every_form_of_import_is_read(tmp_path, source):
    path = tmp_path / 'module.py'
    path.write_text(f'def f():\n    {source}\n')
    assert [module.split('.')[1] for _, module in imported_modules(path)] == ['ppo']


def core_import_graph() -> dict[str, set[str]]:
    """module -> the core modules it imports (module level or inside functions), over the core's own modules."""
    agents = agent_packages()
    files = {}
    for path in sorted(PACKAGE.rglob('*.py')):
        parts = path.relative_to(PACKAGE).with_suffix('').parts
        if parts[0] not in agents:
            files['.'.join(('deep_rl_zoo',) + parts).removesuffix('.__init__')] = path

    def core_module(name: str) -> str:
        while name not in files and '.' in name:
            name = name.rsplit('.', 1)[0]
        return name

    return {
        module: {core_module(name) for _, name in imported_modules(path)} - {module, 'deep_rl_zoo'}
        for module, path in files.items()
    }


def test_the_core_has_no_import_cycle():
    """No core module reaches itself through imports, even those inside functions (the episode player lives below
    the experiment that scores evaluations with it, not in the loops above it)."""
    graph = core_import_graph()
    cycles, done = [], set()

    def visit(module: str, path: list[str]) -> None:  # depth first; an import back into `path` closes a cycle
        for imported in sorted(graph.get(module, ())):
            if imported in path:
                cycles.append(' -> '.join(path[path.index(imported):] + [imported]))
            elif imported not in done:
                visit(imported, path + [imported])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    assert not cycles, 'import cycles in the core:\n' + '\n'.join(cycles)
