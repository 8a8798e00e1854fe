"""Model cards and the Hugging Face Hub: a trained checkpoint as a folder anyone can download, evaluate and train on.

`eval_agent --push_to_hub --hf_repository=USER/NAME` evaluates a checkpoint, then `write_model_folder` puts into one
folder

    README.md       the model card: YAML metadata (library, tags, a model-index whose mean_reward is "mean +/- std"
                    over the evaluated episodes) and how to download, evaluate and continue training, with every
                    hyperparameter of the run
    <checkpoint>    the checkpoint file, under its own name
    config.json     every flag value of the training run, the library versions, the evaluation
    replay.mp4      the evaluation video (when one was recorded)

and `push_folder` uploads it with `huggingface_hub`. `python -m deep_rl_zoo.load_from_hub` brings such a folder (a
hub repository, or a local folder for tests and offline use) back into the checkpoints directory.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from typing import Any, Iterable, Optional

import numpy as np

LIBRARY_NAME = 'deep-rl-zoo'
CARD_FILE = 'README.md'
CONFIG_FILE = 'config.json'
VIDEO_FILE = 'replay.mp4'
RUN_SCRIPTS = {'classic': 'run_classic', 'atari': 'run_atari', 'continuous': 'run_continuous', 'minigrid': 'run_classic'}


class HubError(ValueError):
    """A model folder or repository that cannot be written, read or reached; the message is one line (a ValueError,
    so the run scripts' `flags.run` prints it as one `error:` line)."""


def mean_reward(returns: Iterable[float]) -> str:
    """The hub's mean_reward metric: "mean +/- std" over the evaluated episodes, two decimals (population std)."""
    values = np.asarray(list(returns), dtype=np.float64)
    if values.size == 0:
        raise HubError('no evaluation episode finished: a model card needs at least one (raise --num_eval_steps)')
    return f'{values.mean():.2f} +/- {values.std():.2f}'


def parse_mean_reward(value: str) -> tuple[float, float]:
    """(mean, std) from a "mean +/- std" metric."""
    try:
        mean, std = (float(part) for part in str(value).split('+/-'))
    except ValueError:
        raise HubError(f'mean_reward {value!r} is not "mean +/- std"') from None
    return mean, std


def _json_ready(value: Any) -> Any:
    """Flag values as JSON: tuples as lists, non-finite floats as strings."""
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def card_text(
    *,
    repository_id: str,
    package: str,
    agent_name: str,
    environment_name: str,
    checkpoint_file: str,
    flag_values: dict[str, Any],
    returns: list[float],
    has_video: bool,
) -> str:
    """The model card (README.md) of a checkpoint: YAML metadata the hub reads, then how to use it."""
    from huggingface_hub import EvalResult, ModelCardData

    kind = flag_values.get('environment_kind', 'classic')
    data = ModelCardData(
        library_name=LIBRARY_NAME,
        tags=['reinforcement-learning', 'deep-reinforcement-learning', LIBRARY_NAME, environment_name, agent_name],
        model_name=agent_name,
        eval_results=[
            EvalResult(
                task_type='reinforcement-learning',
                task_name='reinforcement-learning',
                dataset_type=environment_name,
                dataset_name=environment_name,
                metric_type='mean_reward',
                metric_name='mean_reward',
                metric_value=mean_reward(returns),
                verified=False,
            )
        ],
    )
    run_script = RUN_SCRIPTS.get(kind, 'run_classic')
    rows = '\n'.join(f'| `{name}` | `{json.dumps(_json_ready(value))}` |' for name, value in sorted(flag_values.items()))
    video = f'\n![{agent_name} playing {environment_name}]({VIDEO_FILE})\n' if has_video else ''
    return f"""---
{data.to_yaml()}
---

# {agent_name} playing {environment_name}

A {agent_name} agent trained with Deep RL Zoo (`deep_rl_zoo.{package}`) on `{environment_name}`. Greedy evaluation:
mean return {mean_reward(returns)} over {len(returns)} episodes.
{video}
## Download, evaluate, continue training

```bash
python -m deep_rl_zoo.load_from_hub -r {repository_id}          # into ./checkpoints
python -m deep_rl_zoo.{package}.eval_agent --load_checkpoint_file=checkpoints/{checkpoint_file}
python -m deep_rl_zoo.{package}.{run_script} --environment_name={environment_name} --load_checkpoint_file=checkpoints/{checkpoint_file}
```

## Hyperparameters

Every flag of the training run (also in `{CONFIG_FILE}`):

| flag | value |
|---|---|
{rows}
"""


def write_model_folder(
    folder: str,
    *,
    repository_id: str,
    package: str,
    loaded: dict[str, Any],
    checkpoint_path: str,
    returns: list[float],
    video_path: Optional[str] = None,
) -> str:
    """Writes the model folder of the module docstring for the checkpoint `loaded` (as `checkpoint.load_checkpoint`
    returns it) from `checkpoint_path`, evaluated to `returns`; returns the folder. An existing folder is replaced."""
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise HubError(f'the model folder {folder} is a file: pass another --hub_folder')
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    checkpoint_file = os.path.basename(checkpoint_path)
    shutil.copy2(checkpoint_path, os.path.join(folder, checkpoint_file))
    if video_path:
        shutil.copy2(video_path, os.path.join(folder, VIDEO_FILE))
    config = {
        'agent_name': loaded['agent_name'],
        'environment_name': loaded['environment_name'],
        'package': package,
        'checkpoint_file': checkpoint_file,
        'iteration': loaded.get('iteration'),
        'flags': {name: _json_ready(value) for name, value in loaded['flags'].items()},
        'versions': loaded.get('versions', {}),
        'evaluation': {'episodes': len(returns), 'returns': [float(value) for value in returns], 'mean_reward': mean_reward(returns)},
    }
    with open(os.path.join(folder, CONFIG_FILE), 'w', encoding='utf-8') as file:
        json.dump(config, file, indent=2)
        file.write('\n')
    text = card_text(
        repository_id=repository_id,
        package=package,
        agent_name=loaded['agent_name'],
        environment_name=loaded['environment_name'],
        checkpoint_file=checkpoint_file,
        flag_values=loaded['flags'],
        returns=returns,
        has_video=bool(video_path),
    )
    with open(os.path.join(folder, CARD_FILE), 'w', encoding='utf-8') as file:
        file.write(text)
    return folder


def read_model_folder(folder: str) -> dict[str, Any]:
    """The config of a model folder, with the card's metadata parsed back: `mean_reward` (mean, std) from its
    model-index and `card` (the huggingface_hub ModelCard). Raises HubError naming what is missing."""
    from huggingface_hub import ModelCard

    config_path, card_path = os.path.join(folder, CONFIG_FILE), os.path.join(folder, CARD_FILE)
    for path in (config_path, card_path):
        if not os.path.isfile(path):
            raise HubError(f'{folder} is not a Deep RL Zoo model folder: {os.path.basename(path)} is missing')
    with open(config_path, encoding='utf-8') as file:
        try:
            config = json.load(file)
        except json.JSONDecodeError as error:
            raise HubError(f'{config_path} is not valid JSON: {error}') from None
    card = ModelCard.load(card_path)
    results = card.data.eval_results or []
    if not results or results[0].metric_type != 'mean_reward':
        raise HubError(f'{card_path} has no mean_reward in its model-index')
    if not os.path.isfile(os.path.join(folder, config.get('checkpoint_file', ''))):
        raise HubError(f'{folder} lacks its checkpoint {config.get("checkpoint_file")!r}')
    return {**config, 'mean_reward_metric': parse_mean_reward(results[0].metric_value), 'card': card}


def push_folder(folder: str, repository_id: str) -> str:
    """Uploads `folder` to the hub model repository `repository_id` (created when missing) with huggingface_hub,
    under the user's saved token; returns the repository URL. Raises HubError in one line when the hub cannot be
    reached or refuses (the folder stays, to be pushed later)."""
    from huggingface_hub import HfApi

    api = HfApi()
    try:
        url = api.create_repo(repository_id, repo_type='model', exist_ok=True)
        api.upload_folder(folder_path=folder, repo_id=repository_id, repo_type='model', commit_message='Deep RL Zoo model')
    except Exception as error:  # huggingface_hub raises many kinds (no token, offline, HTTP): all end here in one line
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ''
        raise HubError(
            f'could not push {folder} to the Hugging Face Hub repository {repository_id} ({type(error).__name__}: {first_line}); '
            f'the folder is complete: push it later with `{upload_command(repository_id, folder)}`'
        ) from None
    return str(url)


def upload_command(repository_id: str, folder: str) -> str:
    """The command line (huggingface_hub's `hf` CLI) that uploads a model folder later."""
    return f'hf upload {repository_id} {folder}'


def check_repository_id(repository_id: str, flag: str = '--hf_repository', alternative: str = '') -> None:
    """A hub model id is USER/NAME; the error names `flag` (and what else it may be)."""
    parts = repository_id.split('/')
    if len(parts) != 2 or not all(parts):
        raise HubError(f'{flag}={repository_id!r} must be USER/NAME (a Hugging Face Hub model repository){alternative}')
