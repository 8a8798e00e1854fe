"""docs/flags.md is what docs/generate_flags.py writes from the run scripts' --help today: a flag, default or help text
changed without the page being rewritten fails here, with the command that rewrites it."""

import importlib.util
import os

from unit_tests.helpers import REPO_ROOT


def generator():
    spec = importlib.util.spec_from_file_location('generate_flags', os.path.join(REPO_ROOT, 'docs', 'generate_flags.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_flags_page_is_current():
    module = generator()
    with open(module.PAGE, encoding='utf-8') as file:
        checked_in = file.read()
    assert module.generate() == checked_in, 'docs/flags.md is out of date: run .venv/bin/python docs/generate_flags.py'


def test_the_page_names_every_flag_of_every_script_with_the_help_it_parsed():
    module = generator()
    helps = dict(module.help_texts(['deep_rl_zoo.dqn.run_atari', 'deep_rl_zoo.appo.eval_agent']))
    dqn = module.parse_help(helps['deep_rl_zoo.dqn.run_atari'])
    assert list(dqn)[:3] == ['environment', 'training', 'agent']
    assert dqn['training']['num_train_steps'][0] == '250000' and dqn['agent']['replay_capacity'][0] == '1000000'
    assert module.parse_help(helps['deep_rl_zoo.appo.eval_agent'])['agent']['policy_index'][0] == '0'
    with open(module.PAGE, encoding='utf-8') as file:
        page = file.read()
    for themes in map(module.parse_help, helps.values()):
        for flags in themes.values():
            for name in flags:
                assert f'`--{name}`' in page, name
