"""Typed settings (deep_rl_zoo/settings.py, each agent's settings.py) and the step that settles them (flags.settled):
flags are generated from the fields with the instance's values as defaults, saved values keep the flags' names, the
resolution takes the command line over the script's defaults, names an Atari game canonically and checks bounds."""

import dataclasses
import importlib
from pathlib import Path

import pytest
from absl import flags as absl_flags

from deep_rl_zoo import flags, settings
from deep_rl_zoo.appo import settings as appo_settings
from deep_rl_zoo.dqn import settings as dqn_settings
from unit_tests.helpers import REPO_ROOT

AGENTS = sorted(path.parent.name for path in Path(REPO_ROOT, 'deep_rl_zoo').glob('*/agent.py'))


def settings_instances(package):
    """(name, instance) of every settings instance an agent's settings.py names (its scripts' defaults and presets)."""
    module = importlib.import_module(f'deep_rl_zoo.{package}.settings')
    for name, value in vars(module).items():
        if isinstance(value, settings.Settings):
            yield name, value
    for environment, preset in getattr(module, 'PRESETS', {}).items():
        yield f'PRESETS[{environment!r}]', preset


@pytest.mark.parametrize('package', AGENTS)
def test_every_agents_settings_are_within_their_bounds_and_named_after_its_agent(package):
    agent_module = importlib.import_module(f'deep_rl_zoo.{package}.agent')
    agent_names = {getattr(value, 'agent_name', '') for value in vars(agent_module).values() if isinstance(value, type)}
    instances = dict(settings_instances(package))
    assert instances, f'{package}/settings.py names no settings'
    for name, instance in instances.items():
        instance.validate(f'{package}/settings.py {name}')
        assert type(instance).agent_name in agent_names | {''}, (package, name, type(instance).agent_name)
    for environment, preset in getattr(importlib.import_module(f'deep_rl_zoo.{package}.settings'), 'PRESETS', {}).items():
        assert preset.environment_name == environment


def test_the_flags_are_the_fields_with_the_instances_values_as_defaults():
    with flags.script_flags('deep_rl_zoo.dqn.run_atari'):
        fields = dqn_settings.DqnSettings.flag_fields('atari')
        assert {field.name for field in fields} == set(flags._OWN_FLAG_NAMES)  # pylint: disable=protected-access
        for field in fields:
            default = absl_flags.FLAGS[field.name].default
            assert default == settings._plain(getattr(dqn_settings.ATARI, field.name)), field.name  # pylint: disable=protected-access
        assert absl_flags.FLAGS['learn_interval'].help == 'Environment steps between updates.'
        with pytest.raises(absl_flags.IllegalFlagValueError):
            absl_flags.FLAGS.learn_interval = 0  # the field's lower bound
    with flags.script_flags('deep_rl_zoo.dqn.run_classic'):
        assert 'environment_height' not in absl_flags.FLAGS  # Atari's frame settings are flags of run_atari only


def test_saved_values_keep_the_flags_names_and_the_environment_kind():
    values = dqn_settings.ATARI.replace(given_flags=frozenset({'seed'})).flag_values()
    assert values['environment_kind'] == 'atari' and values['learn_interval'] == 4 and 'given_flags' not in values
    assert list(values) == sorted(set(values) - {'environment_kind'}) + ['environment_kind']  # flags by name, then the derived
    assert set(values) - {'environment_kind'} == {field.name for field in dqn_settings.DqnSettings.flag_fields('atari')}
    assert 'environment_height' not in dqn_settings.CLASSIC.flag_values()
    assert dqn_settings.ATARI.with_values({**values, 'not_a_setting': 1}) == dqn_settings.ATARI  # unknown names are ignored


def test_hidden_flags_are_not_defined_and_list_flags_round_trip():
    assert 'discount' not in {field.name for field in appo_settings.AppoSettings.flag_fields('atari')}
    values = appo_settings.CLASSIC.flag_values()
    assert values['encoder_mlp_layers'] == ['64', '64'] and 'discount' not in values
    assert appo_settings.CLASSIC.with_values(values) == appo_settings.CLASSIC  # JSON lists come back as the tuples


def test_settled_takes_the_command_line_names_the_game_canonically_and_checks_bounds(tmp_path):
    values = {'environment_name': 'ALE/Pong-v5', 'learning_rate': 1e-3, 'train_dir': str(tmp_path), 'runs_dir': str(tmp_path)}
    settled = flags.settled(dqn_settings.ATARI, values, frozenset({'environment_name', 'learning_rate'}))
    assert (settled.environment_name, settled.learning_rate, settled.replay_capacity) == ('Pong', 1e-3, 1_000_000)
    assert settled.given_flags == {'environment_name', 'learning_rate'}
    with pytest.raises(ValueError, match=r'^--exploration_epsilon_end_value=2.0: must be at most 1.0$'):
        flags.settled(dqn_settings.ATARI, {**values, 'exploration_epsilon_end_value': 2.0}, frozenset())
    with pytest.raises(ValueError, match=r'^--restart_behavior=again: must be one of resume, restart, overwrite$'):
        dqn_settings.ATARI.replace(restart_behavior='again').validate()


def test_settled_gives_a_minigrid_task_its_kind_for_the_agents_that_take_one(tmp_path):
    from deep_rl_zoo.agent57 import settings as agent57_settings
    from deep_rl_zoo.ppo_rnd import settings as ppo_rnd_settings

    values = {'environment_name': 'MiniGrid-DoorKey-5x5-v0', 'train_dir': str(tmp_path), 'runs_dir': str(tmp_path)}
    for defaults in (agent57_settings.CLASSIC, ppo_rnd_settings.CLASSIC):
        assert flags.settled(defaults, values, frozenset({'environment_name'})).environment_kind == 'minigrid'
    assert flags.settled(agent57_settings.CLASSIC, {**values, 'environment_name': 'CartPole-v1'}, frozenset()).environment_kind == 'classic'
    assert not dqn_settings.DqnSettings.takes_minigrid  # its run_classic refuses MiniGrid ids, naming the agents that take them


def test_a_field_needs_a_known_theme_and_a_flag_type():
    with pytest.raises(ValueError, match='theme'):
        settings.setting(1, 'help', theme='elsewhere')

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Odd(settings.Settings):
        mapping: dict = settings.setting(None, 'no flag type for a dict')

    with pytest.raises(TypeError, match='no flag for type'):
        flags._define_field_flag(dataclasses.fields(Odd)[1], None, 'classic')  # pylint: disable=protected-access


@pytest.mark.parametrize('script, flag', [('dqn.run_classic', 'num_envs'), ('ppo.run_classic', 'num_envs_per_actor'), ('appo.run_classic', 'num_envs_per_worker')])
def test_a_vector_of_more_environments_than_one_process_can_step_is_refused_at_parse_time(script, flag):
    """A million environments took minutes to create, silently, before the first step: the flag's bound refuses them."""
    with flags.script_flags(f'deep_rl_zoo.{script}'):
        setattr(absl_flags.FLAGS, flag, settings.MAX_ENVS_PER_PROCESS)  # the bound itself is allowed
        with pytest.raises(absl_flags.IllegalFlagValueError, match=rf'{settings.MAX_ENVS_PER_PROCESS + 1} is not an integer in the range \[1, 4096\]'):
            setattr(absl_flags.FLAGS, flag, settings.MAX_ENVS_PER_PROCESS + 1)
