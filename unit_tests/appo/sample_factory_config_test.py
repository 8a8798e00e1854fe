"""Tests of reading Sample Factory configurations (model cards) into APPO's flags."""

import io
import json
import os
import shutil

import pytest

from deep_rl_zoo.appo import sample_factory_config as sf_config
from deep_rl_zoo.appo import settings as appo_settings

SHIPPED = os.path.join(os.path.dirname(sf_config.__file__), 'configs', 'atari_amidar.json')
# The model card as published, in the shared folder of the project (when it is there).
PUBLISHED = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'sample_factory', 'appo_atari_amidar_config.json')


def _card() -> dict:
    with open(SHIPPED, encoding='utf-8') as file:
        return json.load(file)


def _write(tmp_path, config) -> str:
    path = tmp_path / 'config.json'
    path.write_text(json.dumps(config) if not isinstance(config, str) else config, encoding='utf-8')
    return str(path)


def test_every_key_of_the_model_card_is_classified_exactly_once():
    card = _card()
    assert len(card) == 90
    tables = (sf_config.SAMPLE_FACTORY_FLAGS, sf_config.UNSUPPORTED_VALUES, sf_config.NOT_APPLICABLE)
    for key in card:
        assert sum(key in table for table in tables) == 1, key
    assert set(sf_config.SAMPLE_FACTORY_FLAGS).isdisjoint(sf_config.UNSUPPORTED_VALUES)
    assert set(sf_config.SAMPLE_FACTORY_FLAGS).isdisjoint(sf_config.NOT_APPLICABLE)
    assert set(sf_config.UNSUPPORTED_VALUES).isdisjoint(sf_config.NOT_APPLICABLE)
    assert sf_config.KNOWN_KEYS == set(card)


def test_every_table_entry_says_how_it_is_honoured_and_the_card_values_are_accepted():
    for key, setting in {**sf_config.SAMPLE_FACTORY_FLAGS, **sf_config.UNSUPPORTED_VALUES}.items():
        assert setting.how and '\n' not in setting.how, key
    for key, reason in sf_config.NOT_APPLICABLE.items():
        assert reason and '\n' not in reason, key
    for key, setting in sf_config.UNSUPPORTED_VALUES.items():
        assert setting.choices, key  # a key with restricted values says which it accepts
        assert _card()[key] in setting.choices, key


@pytest.mark.skipif(not os.path.exists(PUBLISHED), reason='the shared model card is not in this checkout')
def test_shipped_config_is_the_published_model_card():
    with open(PUBLISHED, 'rb') as published, open(SHIPPED, 'rb') as shipped:
        assert shipped.read() == published.read()


def test_loading_the_shipped_config_gives_its_values():
    flags, notes = sf_config.load_config(SHIPPED)
    expected = {
        'learning_rate': 0.0003033891184,
        'rollout': 128,
        'batch_size': 1024,
        'num_batches_per_epoch': 8,
        'num_epochs': 4,
        'num_policies': 2,
        'num_workers': 16,
        'num_envs_per_worker': 2,
        'seed': 1234,
        'async_rl': True,
        'max_policy_lag': 1000,
        'gamma': 0.99,
        'gae_lambda': 0.95,
        'ppo_clip_ratio': 0.1,
        'ppo_clip_value': 1.0,
        'exploration_loss_coeff': 0.0004677351413,
        'value_loss_coeff': 0.5,
        'normalize_returns': True,
        'value_bootstrap': False,
        'with_vtrace': False,
        'max_grad_norm': 0.0,
        'adam_eps': 1e-05,
        'lr_schedule': 'linear_decay',
        'obs_scale': 255.0,
        'normalize_input': True,
        'train_for_env_steps': 100_000_000,
        'env_frameskip': 4,
        'env_framestack': 4,
        'use_rnn': False,
        'nonlinearity': 'relu',
        'encoder_conv_architecture': 'convnet_atari',
        'exploration_loss': 'entropy',
        'encoder_mlp_layers': [512, 512],
        'encoder_conv_mlp_layers': [512],
        'keep_checkpoints': 2,
        'save_best_metric': 'reward',
    }
    for key, value in expected.items():
        assert flags[key] == value, key
        assert type(flags[key]) is type(value), key
    # every APPLIED key is a flag, restricted keys only where they are flags, not-applicable keys never
    flag_keys = set(sf_config.SAMPLE_FACTORY_FLAGS) | {k for k, s in sf_config.UNSUPPORTED_VALUES.items() if s.flag}
    assert set(flags) == flag_keys
    assert 'optimizer' not in flags and 'device' not in flags
    # the not-applicable keys, one line each (no unknown keys in the card)
    ignored = [key for key in _card() if key in sf_config.NOT_APPLICABLE]
    assert len(ignored) == 23
    assert notes == [f'{SHIPPED}: ignored 23 settings that change nothing learned here:'] + [f'  {key}: {sf_config.NOT_APPLICABLE[key]}' for key in ignored]


def test_integers_given_for_float_settings_become_floats(tmp_path):
    flags, _ = sf_config.load_config(_write(tmp_path, {'reward_scale': 1, 'obs_scale': 255, 'rollout': 32}))
    assert flags == {'reward_scale': 1.0, 'obs_scale': 255.0, 'rollout': 32}
    assert type(flags['reward_scale']) is float and type(flags['rollout']) is int


def test_not_applicable_keys_are_noted_with_their_reasons_one_per_line(tmp_path):
    path = _write(tmp_path, {'device': 'gpu', 'heartbeat_interval': 10, 'gamma': 0.9})
    flags, notes = sf_config.load_config(path)
    assert flags == {'gamma': 0.9}
    assert notes == [
        f'{path}: ignored 2 settings that change nothing learned here:',
        f"  device: {sf_config.NOT_APPLICABLE['device']}",
        f"  heartbeat_interval: {sf_config.NOT_APPLICABLE['heartbeat_interval']}",
    ]


def test_checkpoint_cadence_by_time_is_noted_as_ignored_not_taken_as_a_flag(tmp_path):
    """Milestones here end iterations and the best checkpoint is checked after each: Sample Factory's timers for
    them are noted at load, not accepted as flags that nothing reads."""
    path = _write(tmp_path, {'save_milestones_sec': 1200, 'save_best_every_sec': 5, 'save_every_sec': 120})
    flags, notes = sf_config.load_config(path)
    assert flags == {'save_every_sec': 120}
    assert notes == [
        f'{path}: ignored 2 settings that change nothing learned here:',
        '  save_milestones_sec: a milestone checkpoint here ends each iteration (--num_train_steps), kept unless --nokeep_milestones',
        '  save_best_every_sec: the best checkpoint is checked at the end of each iteration (--save_best_metric, --save_best_after)',
    ]


def run_script_settings(*given, **values):
    """APPO's classic-control settings as its run script starts them (learning_rate 5e-3, max_grad_norm 0.5, gamma
    0.98), with `values` set and `given` named as given on the command line."""
    return appo_settings.CLASSIC.replace(**values, given_flags=frozenset(given))


def test_a_config_that_omits_learning_rate_or_max_grad_norm_runs_with_sample_factorys_defaults(tmp_path):
    out = io.StringIO()
    path = _write(tmp_path, {'gamma': 0.9})
    settings = sf_config.import_model_card(path, run_script_settings(), out=out, err=out)
    assert (settings.learning_rate, settings.max_grad_norm, settings.gamma) == (1e-4, 4.0, 0.9)
    assert settings == appo_settings.CLASSIC.replace(learning_rate=1e-4, max_grad_norm=4.0, gamma=0.9)  # nothing else changed
    assert out.getvalue() == f"{path} omits learning_rate, max_grad_norm: Sample Factory's defaults apply (learning_rate=0.0001, max_grad_norm=4)\n"
    # The config's own values, and then the command line, win over the defaults.
    out = io.StringIO()
    settings = sf_config.import_model_card(_write(tmp_path, {'learning_rate': 3e-4}), run_script_settings('max_grad_norm', max_grad_norm=1.5), out=out, err=out)
    assert (settings.learning_rate, settings.max_grad_norm) == (3e-4, 1.5)
    assert out.getvalue() == ''
    settings = sf_config.import_model_card(SHIPPED, run_script_settings(), out=io.StringIO(), err=io.StringIO())
    assert (settings.learning_rate, settings.max_grad_norm) == (0.0003033891184, 0.0)


def test_a_config_value_outside_a_settings_bounds_is_refused_naming_the_file(tmp_path):
    path = _write(tmp_path, {'gamma': 1.5})
    with pytest.raises(ValueError) as error:
        sf_config.import_model_card(path, run_script_settings(), out=io.StringIO(), err=io.StringIO())
    assert str(error.value) == f'{path}: --gamma=1.5: must be at most 1.0'


def test_a_misspelt_key_is_refused_naming_the_key_and_the_suggestion(tmp_path):
    config = _card()
    config['ppo_clip_ratoi'] = config.pop('ppo_clip_ratio')
    path = _write(tmp_path, config)
    with pytest.raises(ValueError) as error:
        sf_config.load_config(path)
    assert str(error.value) == f"{path}: unknown key 'ppo_clip_ratoi'; did you mean 'ppo_clip_ratio'?"


def test_unrelated_unknown_keys_are_warned_about_one_per_line(tmp_path):
    config = {'gamma': 0.99, 'my_custom_thing': 3, 'zzz': True, 'env': 'atari_amidar', 'eval_env_frameskip': 1}
    path = _write(tmp_path, config)
    flags, notes = sf_config.load_config(path)
    assert flags == {'gamma': 0.99}
    # Sample Factory's own keys outside the card (eval_env_frameskip) are not taken for a misspelt env_frameskip
    assert notes == [
        f'warning: {path}: ignored 4 keys that are not Sample Factory settings known here:',
        '  my_custom_thing',
        '  zzz',
        '  env',
        '  eval_env_frameskip',
    ]


@pytest.mark.parametrize(
    'key, value, expected',
    [
        ('learning_rate', '0.001', 'learning_rate must be a number, got "0.001"'),
        ('rollout', 12.5, 'rollout must be an integer, got 12.5'),
        ('rollout', True, 'rollout must be an integer, got true'),
        ('normalize_returns', 1, 'normalize_returns must be true or false, got 1'),
        ('encoder_mlp_layers', 512, 'encoder_mlp_layers must be a list of integers, got 512'),
        ('encoder_mlp_layers', [512, '512'], 'encoder_mlp_layers must be a list of integers, got [512, "512"]'),
        ('gamma', None, 'gamma must be a number, got null'),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_key_and_type(tmp_path, key, value, expected):
    path = _write(tmp_path, {key: value})
    with pytest.raises(ValueError) as error:
        sf_config.load_config(path)
    assert str(error.value) == f'{path}: {expected}'


@pytest.mark.parametrize(
    'key, value',
    [('exploration_loss', 'symmetric_kl'), ('encoder_conv_architecture', 'resnet_impala'), ('optimizer', 'lamb'), ('rnn_num_layers', 2)],
)
def test_unsupported_values_are_refused_in_one_line(tmp_path, key, value):
    path = _write(tmp_path, {key: value})
    with pytest.raises(ValueError) as error:
        sf_config.load_config(path)
    message = str(error.value)
    assert message.startswith(f'{path}: {key}={json.dumps(value)} is not supported here; accepted: ')
    assert '\n' not in message


def test_values_outside_sample_factorys_choices_are_refused(tmp_path):
    path = _write(tmp_path, {'lr_schedule': 'cosine'})
    with pytest.raises(ValueError, match='lr_schedule="cosine" is not a Sample Factory value; choose one of "constant"'):
        sf_config.load_config(path)
    flags, _ = sf_config.load_config(_write(tmp_path, {'lr_schedule': 'kl_adaptive_epoch', 'rnn_type': 'lstm'}))
    assert flags == {'lr_schedule': 'kl_adaptive_epoch', 'rnn_type': 'lstm'}


def test_malformed_files_are_refused_naming_the_file(tmp_path):
    path = _write(tmp_path, '{"gamma": 0.99,')
    with pytest.raises(ValueError, match=r'config\.json: not valid JSON \(') as error:
        sf_config.load_config(path)
    assert str(error.value).startswith(path)
    path = _write(tmp_path, [1, 2])
    with pytest.raises(ValueError) as error:
        sf_config.load_config(path)
    assert str(error.value) == f'{path}: expected a JSON object of Sample Factory settings, got a JSON list'
    missing = str(tmp_path / 'missing.json')
    with pytest.raises(ValueError, match='missing.json: cannot read the Sample Factory config'):
        sf_config.load_config(missing)


def test_the_shipped_config_loads_from_a_copy(tmp_path):
    copy = tmp_path / 'card.json'
    shutil.copy(SHIPPED, copy)
    assert sf_config.load_config(str(copy))[0] == sf_config.load_config(SHIPPED)[0]


@pytest.mark.parametrize(
    'sample_factory_name, ours',
    [
        ('atari_amidar', 'Amidar'),
        ('atari_pong', 'Pong'),
        ('atari_breakout', 'Breakout'),
        ('atari_montezuma', 'MontezumaRevenge'),
        ('atari_montezumarevenge', 'MontezumaRevenge'),
        ('atari_spaceinvaders', 'SpaceInvaders'),
        ('atari_beamrider', 'BeamRider'),
        ('atari_qbert', 'Qbert'),
        ('atari_seaquest', 'Seaquest'),
        ('atari_mspacman', 'MsPacman'),
        ('atari_kongfumaster', 'KungFuMaster'),
        ('atari_asteroid', 'Asteroids'),
        ('CartPole-v1', 'CartPole-v1'),
        ('Pong', 'Pong'),
    ],
)
def test_atari_environment_names_are_mapped(sample_factory_name, ours):
    assert sf_config.atari_environment_name(sample_factory_name) == ours


def test_an_unknown_atari_game_is_refused_with_close_names():
    with pytest.raises(ValueError) as error:
        sf_config.atari_environment_name('atari_nosuchgame')
    assert str(error.value).startswith("'atari_nosuchgame' names no Atari game")
    with pytest.raises(ValueError, match=r'closest: atari_pong'):
        sf_config.atari_environment_name('atari_pongg')
