"""Model cards and hub folders (deep_rl_zoo/model_card.py, deep_rl_zoo/load_from_hub.py): the mean_reward metric, the
card generated then parsed back (valid YAML, numbers matching the evaluation), the folder, installing a folder into
a checkpoints directory, and one clear line wherever the (unreachable) hub or a broken folder is met."""

import json
import os
import re
import shutil

import pytest
import yaml

from deep_rl_zoo import checkpoint, load_from_hub, model_card
from unit_tests.helpers import TRACEBACK, run_module, stderr_lines

SHIPPED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'checkpoints', 'PPO_CartPole-v1.ckpt')
RETURNS = [500.0, 480.0, 490.5]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """The hub is never reached from tests: huggingface_hub's offline mode makes its calls fail at once."""
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')


def test_mean_reward_is_mean_plus_minus_population_std_and_parses_back():
    # mean 1470.5 / 3 = 490.1667; deviations 9.833, -10.167, 0.333: variance 200.167 / 3 = 66.72, std 8.168.
    assert model_card.mean_reward(RETURNS) == '490.17 +/- 8.17'
    assert model_card.mean_reward([21.0]) == '21.00 +/- 0.00'
    assert model_card.parse_mean_reward('490.17 +/- 8.17') == (490.17, 8.17)
    with pytest.raises(model_card.HubError, match='no evaluation episode finished'):
        model_card.mean_reward([])
    with pytest.raises(model_card.HubError, match='is not "mean \\+/- std"'):
        model_card.parse_mean_reward('490.17')


@pytest.fixture
def folder(tmp_path):
    loaded = checkpoint.load_checkpoint(SHIPPED)
    video = tmp_path / 'episode.mp4'
    video.write_bytes(b'not really a video')
    return model_card.write_model_folder(
        str(tmp_path / 'model'), repository_id='someone/ppo-cartpole', package='ppo', loaded=loaded, checkpoint_path=SHIPPED, returns=RETURNS, video_path=str(video)
    )


def test_the_folder_holds_card_checkpoint_config_and_video(folder):
    assert sorted(os.listdir(folder)) == ['PPO_CartPole-v1.ckpt', 'README.md', 'config.json', 'replay.mp4']
    with open(os.path.join(folder, 'PPO_CartPole-v1.ckpt'), 'rb') as copy, open(SHIPPED, 'rb') as original:
        assert copy.read() == original.read()
    with open(os.path.join(folder, 'config.json'), encoding='utf-8') as file:
        config = json.load(file)
    loaded = checkpoint.load_checkpoint(SHIPPED)
    assert config['agent_name'] == 'PPO' and config['environment_name'] == 'CartPole-v1' and config['package'] == 'ppo'
    assert config['flags']['learning_rate'] == loaded['flags']['learning_rate'] and len(config['flags']) == len(loaded['flags'])
    assert config['evaluation'] == {'episodes': 3, 'returns': RETURNS, 'mean_reward': '490.17 +/- 8.17'}


def test_the_card_is_valid_yaml_metadata_with_the_evaluation_and_how_to_use_it(folder):
    text = open(os.path.join(folder, 'README.md'), encoding='utf-8').read()
    assert text.startswith('---\n')
    metadata = yaml.safe_load(text.split('---\n')[1])
    assert metadata['library_name'] == 'deep-rl-zoo'
    assert {'reinforcement-learning', 'CartPole-v1', 'PPO'} <= set(metadata['tags'])
    (model,) = metadata['model-index']
    (result,) = model['results']
    assert model['name'] == 'PPO' and result['dataset']['name'] == 'CartPole-v1'
    assert result['metrics'] == [{'type': 'mean_reward', 'value': '490.17 +/- 8.17', 'name': 'mean_reward', 'verified': False}]
    assert 'python -m deep_rl_zoo.load_from_hub -r someone/ppo-cartpole' in text
    assert 'python -m deep_rl_zoo.ppo.eval_agent --load_checkpoint_file=checkpoints/PPO_CartPole-v1.ckpt' in text
    assert 'python -m deep_rl_zoo.ppo.run_classic --environment_name=CartPole-v1' in text
    assert '| `learning_rate` |' in text and '![PPO playing CartPole-v1](replay.mp4)' in text
    parsed = model_card.read_model_folder(folder)
    assert parsed['mean_reward_metric'] == (490.17, 8.17) and parsed['card'].data.library_name == 'deep-rl-zoo'


def test_load_from_hub_installs_a_local_folder_into_the_checkpoints_directory(folder, tmp_path, capsys):
    checkpoints = tmp_path / 'checkpoints'
    assert load_from_hub.main(['-r', folder, '--checkpoint_dir', str(checkpoints)]) == 0
    out = capsys.readouterr().out
    installed = checkpoints / 'PPO_CartPole-v1.ckpt'
    assert f'PPO on CartPole-v1 (card: mean reward 490.17 +/- 8.17) -> {installed}' in out
    assert f'python -m deep_rl_zoo.ppo.eval_agent --load_checkpoint_file={installed}' in out
    assert checkpoint.load_checkpoint(str(installed), agent_name='PPO')['environment_name'] == 'CartPole-v1'
    assert sorted(os.listdir(checkpoints)) == ['PPO_CartPole-v1.ckpt', 'PPO_CartPole-v1.config.json']


def test_load_from_hub_refuses_to_replace_a_checkpoint_without_force(folder, tmp_path, capsys):
    checkpoints = tmp_path / 'checkpoints'
    checkpoints.mkdir()
    own = checkpoints / 'PPO_CartPole-v1.ckpt'
    own.write_bytes(b'the user own training')
    assert load_from_hub.main(['-r', folder, '--checkpoint_dir', str(checkpoints)]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [f'error: {own} exists; pass --force to replace it, or another --checkpoint_dir']
    assert own.read_bytes() == b'the user own training' and sorted(os.listdir(checkpoints)) == ['PPO_CartPole-v1.ckpt']
    assert load_from_hub.main(['-r', folder, '--checkpoint_dir', str(checkpoints), '--force']) == 0
    assert checkpoint.load_checkpoint(str(own), agent_name='PPO')['environment_name'] == 'CartPole-v1'


def test_broken_folders_and_an_unreachable_hub_are_one_line(folder, tmp_path, capsys):
    def error_of(*argv):
        assert load_from_hub.main(list(argv) + ['--checkpoint_dir', str(tmp_path / 'out')]) == 1
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1
        return lines[0]

    broken = shutil.copytree(folder, tmp_path / 'broken')
    os.remove(broken / 'config.json')
    assert error_of('-r', str(broken)) == f'error: {broken} is not a Deep RL Zoo model folder: config.json is missing'
    corrupt = shutil.copytree(folder, tmp_path / 'corrupt')
    (corrupt / 'PPO_CartPole-v1.ckpt').write_bytes(b'\0' * 100)
    assert error_of('-r', str(corrupt)).startswith('error: checkpoint ')
    assert error_of('-r', 'not-a-repository-id') == "error: -r='not-a-repository-id' must be USER/NAME (a Hugging Face Hub model repository), or a local model folder"
    assert error_of('-r', 'someone/ppo-cartpole').startswith('error: could not download someone/ppo-cartpole from the Hugging Face Hub (')
    assert not os.path.exists(tmp_path / 'out' / 'PPO_CartPole-v1.ckpt')
    with pytest.raises(model_card.HubError, match=r'could not push .* the folder is complete: push it later with `hf upload someone/ppo-cartpole '):
        model_card.push_folder(folder, 'someone/ppo-cartpole')


RETURN_LINE = re.compile(r'^PPO on CartPole-v1, checkpoint \S+: (\d+) episodes, return mean (-?[\d.]+) std (-?[\d.]+)', re.M)


@pytest.mark.slow
def test_eval_agent_writes_the_model_folder_and_a_model_loaded_back_evaluates_to_the_same_score(tmp_path):
    """eval_agent --push_to_hub on a CartPole checkpoint: the folder is complete, the (offline) upload is one line;
    load_from_hub brings the folder into a checkpoints directory, and eval_agent there gives the card's score."""
    folder = tmp_path / 'hub' / 'ppo-cartpole'
    common = ('--num_eval_episodes=3', '--recording_video_dir=videos', '--seed=4')
    proc = run_module(
        'deep_rl_zoo.ppo.eval_agent', f'--load_checkpoint_file={SHIPPED}', *common, '--push_to_hub', '--hf_repository=someone/ppo-cartpole',
        f'--hub_folder={folder}', cwd=str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert TRACEBACK not in proc.stderr
    assert stderr_lines(proc)[-1].startswith('error: could not push ')
    assert f'model folder: {folder} (model card, checkpoint, config, video)' in proc.stdout
    episodes, mean, std = RETURN_LINE.search(proc.stdout).groups()
    parsed = model_card.read_model_folder(str(folder))
    assert parsed['mean_reward_metric'] == (round(float(mean), 2), round(float(std), 2)) and parsed['evaluation']['episodes'] == int(episodes) == 3
    assert os.path.getsize(folder / 'replay.mp4') > 0

    proc = run_module('deep_rl_zoo.load_from_hub', '-r', str(folder), '--checkpoint_dir=downloaded', cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = run_module('deep_rl_zoo.ppo.eval_agent', '--load_checkpoint_file=downloaded/PPO_CartPole-v1.ckpt', *common, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert RETURN_LINE.search(proc.stdout).groups() == (episodes, mean, std)

    offline = tmp_path / 'hub' / 'offline'
    proc = run_module(
        'deep_rl_zoo.ppo.eval_agent', f'--load_checkpoint_file={SHIPPED}', '--num_eval_episodes=1', '--push_to_hub', '--nohub_upload',
        '--hf_repository=someone/ppo-cartpole', f'--hub_folder={offline}', cwd=str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f'not uploaded (--nohub_upload); upload it with `hf upload someone/ppo-cartpole {offline}`' in proc.stdout
    assert model_card.read_model_folder(str(offline))['evaluation']['episodes'] == 1

    bad = run_module('deep_rl_zoo.ppo.eval_agent', f'--load_checkpoint_file={SHIPPED}', '--push_to_hub', cwd=str(tmp_path))
    assert bad.returncode == 1 and stderr_lines(bad)[-1] == "error: --hf_repository='' must be USER/NAME (a Hugging Face Hub model repository)"
